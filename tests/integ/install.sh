#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/integ/install.sh: `./run install` into a staging root (DESTDIR, so
# nothing lands in /usr or /etc), then what was installed, used as installed:
#  - the file list: the CLI on PATH (bin/ringrouter, a link), the supervisor,
#    rr-router, rr-tap, rr-afxdp, rr-shaper and steer.bpf.o in lib/ringrouter,
#    the docs, the unit, the example manifest; no test stand-in;
#  - the installed `ringrouter --version`, and `check` of the example manifest;
#  - the installed supervisor, run by its link, finds its installed services
#    (every service's executable is under lib/ringrouter), answers, stops with
#    a clean census;
#  - the unit's paths name PREFIX; `systemd-analyze security` of it is at
#    most 5.0 and `systemd-analyze verify` finds nothing, when
#    systemd-analyze exists;
#  - with systemd as PID 1, a copy of the unit (its own name and run
#    directory) is started and must say READY (Type=notify), then stopped.
#    Without systemd that part is not tried, and the test says so.
set -u
. "$(dirname "$0")/../lib/sup.sh"
sup_init install
ROOT=$SUP_ROOT

# A staging root systemd could also run from (not under /tmp or /var/tmp,
# which PrivateTmp= hides from the unit).
D=$(mktemp -d /var/lib/rrt-install.XXXXXX) || sup_fail "mktemp under /var/lib"
chmod 755 "$D"
trap 'rm -rf "$D"; sup_cleanup' EXIT
P=/opt/rrt-prefix
out=$(cd "$ROOT" && DESTDIR=$D ./run install "$P" 2>&1) || sup_fail "./run install failed: $out"
echo "$out" | grep '^run install:'

want="etc/ringrouter/manifest.ini
etc/systemd/system/ringrouter.service
etc/systemd/system/ringrouter-exporter.service
opt/rrt-prefix/bin/ringrouter
opt/rrt-prefix/lib/ringrouter/ringrouter
opt/rrt-prefix/lib/ringrouter/rr-afxdp
opt/rrt-prefix/lib/ringrouter/rr-router
opt/rrt-prefix/lib/ringrouter/rr-shaper
opt/rrt-prefix/lib/ringrouter/rr-tap
opt/rrt-prefix/lib/ringrouter/steer.bpf.o
opt/rrt-prefix/share/doc/ringrouter/README.md"
for f in "$ROOT"/docs/*.md; do want+=$'\n'"opt/rrt-prefix/share/doc/ringrouter/docs/${f##*/}"; done
got=$(cd "$D" && find . \( -type f -o -type l \) | sed 's|^\./||' | LC_ALL=C sort)
want=$(LC_ALL=C sort <<<"$want")
[ "$got" = "$want" ] || sup_fail "installed files differ from the expected list:
$(diff <(echo "$want") <(echo "$got"))"
echo "installed: $(wc -l <<<"$got") files, no test stand-in"
[ -L "$D$P/bin/ringrouter" ] || sup_bad "bin/ringrouter is not a link"
[ "$(stat -c %a "$D$P/lib/ringrouter/rr-router")" = 755 ] || sup_bad "rr-router is not mode 755"

# The second install keeps an edited manifest.
echo "; edited" >>"$D/etc/ringrouter/manifest.ini"
out=$(cd "$ROOT" && DESTDIR=$D ./run install "$P" 2>&1) || sup_fail "a second ./run install failed: $out"
tail -n 1 "$D/etc/ringrouter/manifest.ini" | grep -qx '; edited' || sup_bad "a second install replaced the manifest"
grep -q 'manifest.ini exists: left as it is' <<<"$out" || sup_bad "a second install did not say it kept the manifest"

RRI=$D$P/bin/ringrouter
v=$("$RRI" --version) || sup_bad "installed ringrouter --version: exit $?"
echo "installed --version: $v"
[[ $v == ringrouter\ * ]] || sup_bad "--version said: $v"
c=$("$RRI" check -c "$D/etc/ringrouter/manifest.ini" 2>&1) || sup_bad "check of the example manifest: $c"
echo "installed check: $c"

unit=$D/etc/systemd/system/ringrouter.service
grep -q "^ExecStart=$P/bin/ringrouter up -c /etc/ringrouter/manifest.ini$" "$unit" || sup_bad "the unit's ExecStart does not name $P"
grep -v '^#' "$unit" | grep -q /usr/local && sup_bad "the unit still names /usr/local"
if command -v systemd-analyze >/dev/null; then
    score=$(systemd-analyze security --offline=yes "$unit" 2>&1 | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
    [ -n "$score" ] || sup_fail "systemd-analyze security printed no score"
    awk -v s="$score" 'BEGIN { exit !(s <= 5.0) }' || sup_bad "systemd-analyze security: $score, expected at most 5.0"
    echo "systemd-analyze security: $score (at most 5.0)"
    # verify: every directive known, every command there. In a private
    # mount namespace PREFIX is the staged one, so nothing lands in /opt.
    verify() { # verify UNIT WHAT
        unshare -m --propagation private true 2>/dev/null || return 0
        v=$(unshare -m --propagation private bash -c 'mount -t tmpfs none /opt && mkdir -p "$2" &&
            mount --bind "$1$2" "$2" && systemd-analyze verify --man=no "$3" 2>&1' _ "$D" "$P" "$1")
        [ -z "$v" ] || sup_bad "$2systemd-analyze verify: $v"
        echo "$2systemd-analyze verify: no complaint"
    }
    verify "$unit" ""
    # The exporter's unit (docs/observability.md): no privilege, so far less exposed.
    xunit=$D/etc/systemd/system/ringrouter-exporter.service
    grep -q "^ExecStart=$P/bin/ringrouter exporter " "$xunit" || sup_bad "the exporter unit's ExecStart does not name $P"
    score=$(systemd-analyze security --offline=yes "$xunit" 2>&1 | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
    awk -v s="$score" 'BEGIN { exit !(s != "" && s <= 2.0) }' || sup_bad "the exporter unit: systemd-analyze security: \"$score\", expected at most 2.0"
    echo "the exporter unit: systemd-analyze security: $score (at most 2.0)"
    verify "$xunit" "the exporter unit: "
else
    echo "systemd-analyze is not installed: the unit's score was not measured"
fi

# The installed supervisor, by its link, in a namespace of its own.
sup_netns
NS=$SUP_NS
sup_manifest "$SUP_T/m.ini"
sed -i 's/^binary = .*$//' "$SUP_T/m.ini" # the real services: the installed ones
RR=$RRI
sup_start "$NS" "$SUP_T/m.ini"
for s in "${SUP_SERVICES[@]}"; do
    exe=$(readlink "/proc/${SUP_PIDS[$s]}/exe")
    [ "$exe" = "$D$P/lib/ringrouter/$( [ "$s" = router ] && echo rr-router || echo rr-tap)" ] ||
        sup_bad "$s runs $exe, not the installed one"
done
echo "installed supervisor: ${SUP_SERVICES[*]} up from $P/lib/ringrouter"
sup_stop TERM 10
sup_census_ok

if [ "$(ps -p 1 -o comm= 2>/dev/null)" = systemd ] && command -v systemctl >/dev/null; then
    # A copy of the unit under a name of its own, running the staged binaries
    # on the test's manifest, with its own run directory.
    name=rrt-install-$$
    m=$D/etc/ringrouter/test.ini
    sed -e "s|^run_dir = .*|run_dir = /run/$name|" "$SUP_T/m.ini" >"$m"
    sed -i "s|^\[port a\]|[port a]\nnetns = $NS|; s|^\[port b\]|[port b]\nnetns = $NS|" "$m"
    sed -e "s|$P/bin/ringrouter|$RRI|g" -e "s|/etc/ringrouter/manifest.ini|$m|g" \
        -e "s|^RuntimeDirectory=.*|RuntimeDirectory=$name|" -e "s|-/run/ringrouter|-/run/$name|" \
        -e "s|^StateDirectory=.*|StateDirectory=$name|" -e "s|-/var/lib/ringrouter|-/var/lib/$name|" \
        -e 's|^Restart=.*|Restart=no|' "$unit" >"/run/systemd/system/$name.service"
    trap 'systemctl stop "$name" 2>/dev/null; rm -f "/run/systemd/system/$name.service"; systemctl daemon-reload
        rm -rf "$D" "/var/lib/$name"; sup_cleanup' EXIT
    systemctl daemon-reload
    if timeout 60 systemctl start "$name"; then
        st=$(systemctl show -p StatusText --value "$name")
        echo "systemd: $name started (Type=notify: READY=1 arrived): $st"
        [ "$st" = "3 services up" ] || sup_bad "the unit's status text: \"$st\""
        systemctl stop "$name" || sup_bad "systemctl stop $name"
    else
        sup_bad "systemctl start $name failed: $(journalctl -u "$name" -n 20 --no-pager 2>&1)"
    fi
else
    echo "systemd is not PID 1 here: starting the unit was not tried (the rest of the test ran)"
fi
sup_verdict install
