#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/lib/faultcamp.py: a fault campaign through `ringrouter inject`, and
its report (tests/integ/fault_campaign.sh, bench/faults).

  faultcamp.py run SOCK LOG OUT --services A,B,.. --faults N --seed S
               --hang-ms H [--deadline-s T] [--kinds K,K,..] [--quiet Q]
      N faults, one at a time, cycling through every kind x service in an
      order from the seed, each with random arguments: talks to the control
      socket SOCK itself (no process per request). For each fault: wait until
      the target is up (and, for a kind that kills it, past its 100 ms stable
      period, so that its restart is the immediate one), note every
      service's pid and restart count, inject, then wait for the target's
      recovery: a new pid up (kill, crash, a stop past hang_ms), the fault's
      duration over and the same pid up (stop, slow, exhaust), or the answer
      (the others); and then for the path to drain (every queue below Q
      packets, default QUIET; a stream of R/s keeps about R/1000 in its
      queues as it runs, so a bench passes that: three looks 5 ms apart: the rings, the router's hold queues,
      the drivers' backlogs, the shapers' classes), since what a stalled path drops while it catches up is this
      fault's doing. A leak is ended by a kill, and the supervisor's log LOG
      must show the death reclaiming at least what the service said it
      held. Then every other service must have kept its pid and restart
      count: anything else is an isolation break. One row per fault in OUT
      (tab-separated, header first). Exit 0 once done, 1 if the supervisor
      stopped answering. With --control 1, each round also has one placebo
      per service (kind "none": nothing injected, the same waits and
      counting), not counted in N: the loss the traffic has anyway.
  faultcamp.py sample SOCK OUT [--every-ms MS] [--ns LABEL:PID ...]
      until SIGTERM, every MS (default 50) ms: every drop counter there is
      on the way (the services' and rings' drop, error and full counters
      from `stats json`, the pool's alloc_fail; in each namespace LABEL,
      through /proc/PID/net of a process in it: every device's rx/tx drops
      and errors, Udp InErrors/RcvbufErrors/SndbufErrors, each UDP socket's
      drops; the host's softnet backlog drops; and, as NAME/cpu_starved_ms,
      the ms each service and each flow's process waited for a CPU in the
      sample periods where it waited 5 ms or more, as host/steal_ms the ms
      the hypervisor took from our CPUs in the periods where it took 5 ms or
      more, as rr/NAME/cpu_throttled the periods its cpu_max_pct held it), one line "T_US NAME VALUE"
      in OUT each time a value changed. The report charges to each window
      what rose in it, so that a lost datagram has a place.
  faultcamp.py report OUT [--flow NAME SENDLOG BITMAP SVC,SVC [--gaps GAPLOG] ...]
                     [--samples SAMPLES] [--table]
      packets lost per fault: a fault's window runs from its injection to
      the next one's; a flow's loss in it is the datagrams its sender sent
      in the window (faultflow's SENDLOG) that never arrived (its BITMAP). A
      fault's own loss is that of the flow through its target (the first
      flow listing it). A target-only kind (all but exhaust) into a service
      that a flow does not cross must cost that flow nothing: a datagram
      lost there is an isolation break too. With the sink's GAPLOG, a
      window ends earlier for datagrams still in flight when the next fault
      struck their own path (the next datagram after their hole arrived
      only after that injection): the next fault destroyed them, and they
      are its loss (not if that fault is of a shared kind, exhaust, whose
      losses never count). With SAMPLES (`sample`), every window where a flow lost
      datagrams names the drop counters that rose in it, and `dropped_by`
      lines total each counter over the run; and a window whose other-flow
      loss came with STEAL_UNJUDGED_MS or more of host/steal_ms is not an
      isolation break but unjudged (listed, and counted apart, as are such
      placebo windows). Prints the table (one row per
      kind x service) with --table, and the `faults_*` lines.
"""
import bisect
import json
import os
import random
import signal
import socket
import sys
import time

KINDS = ["kill", "stop", "crash", "corrupt-ring", "corrupt-meta", "double-free", "chain-loop", "leak", "slow",
         "exhaust"]
SHARED = {"exhaust"}  # hurts every service that allocates, by design
SAMPLE_LAG_US = 100000  # report: a counter's rise is charged to a window this long after it ends
# A window in which the hypervisor took this many ms from our CPUs
# (host/steal_ms) while the other flow lost is not judged: no queue on the
# path lasts that long, so nothing the services do could have saved it.
STEAL_UNJUDGED_MS = 50
QUIET = 16  # packets in a queue: at most this many, and the path has drained
QUIET_GAP = 0.005  # s between the three looks that must all find it drained
QUEUES = ("tx_held", "backlog_depth", "backlog")  # services' queue gauges (docs/stats.md)
COLS = ["t0_us", "t1_us", "svc", "kind", "args", "ok", "dies", "recovery_ms", "drained_ms", "iso", "leaked", "answer"]


def now_us():
    return time.time_ns() // 1000


class Ctl:
    def __init__(self, path):
        self.path = path

    def ask(self, line):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        try:
            s.connect(self.path)
            s.sendall((line + "\n").encode())
            chunks = []
            while True:
                b = s.recv(65536)
                if not b:
                    break
                chunks.append(b)
        finally:
            s.close()
        r = b"".join(chunks).decode(errors="replace")
        if r.startswith("OK\n"):
            return True, r[3:].strip()
        if r.startswith("ERR\n"):
            return False, r[4:].strip()
        raise OSError("no answer from the supervisor")

    def path_quiet(self, most):
        """Is every queue of the graph holding fewer than @most packets: each
        ring, and the queues a service keeps outside them (the router's hold
        queues, tx_held; a driver's TX backlog, backlog_depth; a shaper's
        classes, backlog)? A ring alone can look empty while the router
        still holds thousands for a full one."""
        ok, text = self.ask("stats json")
        if not ok:
            return False
        j = json.loads(text)
        return all(r["occupancy"] < most for r in j["rings"]) and all(
            v < most for sv in j["services"] for k, v in sv.get("counters", {}).items() if k in QUEUES)

    def status(self):
        ok, text = self.ask("status json")
        if not ok:
            raise OSError("status: " + text)
        return {s["name"]: s for s in json.loads(text)["services"]}


def wait_for(pred, secs, step=0.001):
    end = time.monotonic() + secs
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() >= end:
            return None
        time.sleep(step)


def args_for(rng, kind, hang_ms):
    """Random arguments; the duration (ms) the fault lasts; whether it kills."""
    if kind == "stop":
        if rng.random() < 0.125:
            ms = hang_ms + 50
            return str(ms), ms, True
        ms = rng.randint(10, max(11, hang_ms // 2))
        return str(ms), ms, False
    if kind == "slow":
        ms = rng.randint(20, 150)
        return "%d %d" % (rng.randint(20, 300), ms), ms, False
    if kind == "exhaust":
        ms = rng.randint(10, 80)
        return str(ms), ms, False
    if kind == "leak":
        return str(rng.randint(1, 32)), 0, False
    if kind == "none":  # a placebo as long as a short fault
        return "", rng.randint(5, 100), False
    return "", 0, kind in ("kill", "crash")


def log_size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def log_has(path, off, start, part):
    with open(path, "rb") as f:
        f.seek(off)
        return any(line.startswith(start) and part in line
                   for line in f.read().decode(errors="replace").splitlines())


def reclaimed_since(path, off, svc):
    with open(path, "rb") as f:
        f.seek(off)
        for line in f.read().decode(errors="replace").splitlines():
            pre = "ringrouter: %s: reclaimed " % svc
            if line.startswith(pre) and line.endswith(" buffers"):
                return int(line[len(pre):].split()[0])
    return None


def run(a):
    sock, log, out = a[0], a[1], a[2]
    opt = dict(zip(a[3::2], a[4::2]))
    services = opt["--services"].split(",")
    nfaults = int(opt["--faults"])
    rng = random.Random(int(opt.get("--seed", "1")))
    hang_ms = int(opt.get("--hang-ms", "500"))
    quiet = max(QUIET, int(opt.get("--quiet", str(QUIET))))
    deadline = time.monotonic() + float(opt.get("--deadline-s", "1e9"))
    ctl = Ctl(sock)
    kinds = opt["--kinds"].split(",") if "--kinds" in opt else KINDS
    pairs = [(s, k) for s in services for k in kinds]
    if opt.get("--control") == "1":
        pairs += [(s, "none") for s in services]  # placebos: the loss the traffic has anyway
    order = []
    rows = []
    t_start = time.monotonic()
    with open(out, "w") as f:
        f.write("\t".join(COLS) + "\n")
        i = 0
        while i < nfaults:
            if time.monotonic() >= deadline:
                print("faultcamp: deadline reached after %d faults" % i, file=sys.stderr)
                break
            if not order:
                order = pairs[:]
                rng.shuffle(order)
            svc, kind = order.pop()
            args, dur_ms, dies = args_for(rng, kind, hang_ms)
            try:
                row = one_fault(ctl, log, svc, kind, args, dur_ms, dies, hang_ms, quiet)
            except OSError as e:
                print("faultcamp: fault %d (%s %s %s): the supervisor did not answer: %s" % (i, svc, kind, args, e),
                      file=sys.stderr)
                return 1
            rows.append(row)
            f.write("\t".join(str(row[c]) for c in COLS) + "\n")
            if kind == "none":
                continue
            i += 1
            if i % 500 == 0:
                print("faultcamp: %d faults in %.0f s" % (i, time.monotonic() - t_start), file=sys.stderr)
    rows = [r for r in rows if r["kind"] != "none"]
    bad = [r for r in rows if r["iso"] != "-" or r["ok"] != 1]
    print("faultcamp: %d faults in %.1f s, %d not carried out, %d isolation breaks" %
          (len(rows), time.monotonic() - t_start, sum(1 for r in rows if r["ok"] != 1),
           sum(1 for r in rows if r["iso"] != "-")), file=sys.stderr)
    for r in bad[:20]:
        print("  %s %s %s: ok %s iso %s: %s" % (r["svc"], r["kind"], r["args"], r["ok"], r["iso"], r["answer"]),
              file=sys.stderr)
    return 0


def one_fault(ctl, log, svc, kind, args, dur_ms, dies, hang_ms, quiet=QUIET):
    def ready():
        st = ctl.status()
        t = st.get(svc)
        if not t or t["state"] != "up" or t["pid"] <= 0:
            return None
        if (dies or kind == "leak") and t["uptime_ms"] < 110:
            return None  # inside its stable period: a death now would back off
        return st

    st = wait_for(ready, 10)
    if st is None:
        st = ctl.status()
    snap = {n: (s["pid"], s["restarts"]) for n, s in st.items()}
    old = snap[svc][0]
    off = log_size(log)
    t0 = now_us()
    if kind == "none":
        ok, ans = True, "control: nothing injected for %d ms" % dur_ms
    else:
        ok, ans = ctl.ask(("inject %s %s %s" % (svc, kind, args)).strip())
    leaked = 0
    if ok and kind == "leak":
        held = int(ans.split(" holds ")[1].split()[0]) if " holds " in ans else 0
        ok2, ans2 = ctl.ask("inject %s kill" % svc)
        dies = ok2
        if not ok2:
            ans += "; kill: " + ans2
    if dies and ok:
        st = wait_for(lambda: (lambda x: x if x[svc]["state"] == "up" and x[svc]["pid"] not in (0, old) else None)(
            ctl.status()), 10)
    else:
        if dur_ms:
            time.sleep(max(0, (t0 + dur_ms * 1000 - now_us()) / 1e6))
        if ok and kind in ("stop", "exhaust"):
            # Over when the supervisor says so: the SIGCONT sent, the buffers given back.
            end = "SIGCONT sent to pid" if kind == "stop" else "buffers given back"
            if not wait_for(lambda: log_has(log, off, "ringrouter: inject: %s: %s" % (svc, kind), end), 5, 0.001):
                ans += "; no end of the %s in the log" % kind
                ok = False
        st = wait_for(lambda: (lambda x: x if x[svc]["state"] == "up" else None)(ctl.status()), 10)
    # Back is not recovered: a path that stalled drains its queues first, and
    # what it drops meanwhile belongs to this fault, not to the next one.
    # Recovered: every queue below a quarter of a burst, three times over
    # 10 ms (what waits in a TAP's own queue shows in none of them: it
    # keeps the next ring busy for a while as it drains).
    t_back = now_us()

    def drained():
        for i in range(3):
            if i:
                time.sleep(QUIET_GAP)
            if not ctl.path_quiet(quiet):
                return False
        return True

    if st is not None:
        wait_for(drained, 2, 0.002)
    t1 = now_us()
    if st is None:
        st = ctl.status()
    iso = []
    for n, (pid, rs) in snap.items():
        s = st.get(n)
        if n == svc:
            want = rs + (1 if dies and ok else 0)
            if s["restarts"] != want or (not (dies and ok) and s["pid"] != pid):
                ans += "; target restarts %d -> %d (pid %d -> %d)" % (rs, s["restarts"], pid, s["pid"])
                ok = False
            continue
        if s["pid"] != pid or s["restarts"] != rs:
            iso.append("%s:%d->%d" % (n, rs, s["restarts"]))
    if ok and kind == "leak":
        got = wait_for(lambda: reclaimed_since(log, off, svc), 2, 0.005)
        leaked = max(0, held - (got or 0))
    return {"t0_us": t0, "t1_us": t1, "svc": svc, "kind": kind, "args": args or "-", "ok": 1 if ok else 0,
            "dies": 1 if dies else 0, "recovery_ms": "%.2f" % ((t_back - t0) / 1000.0),
            "drained_ms": "%.2f" % ((t1 - t0) / 1000.0), "iso": ",".join(iso) or "-",
            "leaked": leaked, "answer": ans.replace("\t", " ").replace("\n", " ")}


# ---- sample: where a lost datagram went ----------------------------------

DROPPY = ("drop", "err", "fail", "full", "bad", "missed", "nobufs", "eagain", "short")


def ns_counters(label, pid):
    """The drop counters of the namespace process @pid is in, by name."""
    out = {}
    base = "/proc/%d/net/" % pid
    with open(base + "dev") as f:
        for line in f.readlines()[2:]:
            dev, _, rest = line.partition(":")
            v = rest.split()
            dev = dev.strip()
            if dev == "lo":
                continue
            for name, i in (("rx_errs", 2), ("rx_drop", 3), ("rx_fifo", 4), ("tx_errs", 10), ("tx_drop", 11),
                            ("tx_fifo", 12)):
                out["%s/dev:%s/%s" % (label, dev, name)] = int(v[i])
    with open(base + "snmp") as f:
        udp = [line.split() for line in f if line.startswith("Udp:")]
    for k, v in zip(udp[0][1:], udp[1][1:]):
        if k in ("InErrors", "RcvbufErrors", "SndbufErrors", "MemErrors"):
            out["%s/udp/%s" % (label, k)] = int(v)
    with open(base + "udp") as f:
        for line in f.readlines()[1:]:
            v = line.split()
            out["%s/sock:%d/drops" % (label, int(v[1].split(":")[1], 16))] = int(v[-1])
    return out


def rr_counters(ctl):
    out = {}
    ok, text = ctl.ask("stats json")
    if not ok:
        return out
    j = json.loads(text)
    for sv in j.get("services", []):
        for k, v in sv.get("counters", {}).items():
            if any(w in k for w in DROPPY) and not k.endswith("_max"):
                out["rr/%s/%s" % (sv["name"], k)] = v
        out["rr/%s/wake_missed" % sv["name"]] = sv.get("wake_missed", 0)
    for r in j.get("rings", []):
        for k, v in r.items():
            if any(w in k for w in DROPPY):
                out["rr/ring:%s/%s" % (r["name"], k)] = v
    out["rr/pool/alloc_fail"] = j.get("pool", {}).get("alloc_fail", 0)
    # Gauges (GAUGES): who holds the pool, so that a window where it ran
    # short shows whose share grew.
    pool = j.get("pool", {})
    if "free" in pool:
        out["rr/pool/in_use"] = pool["buffers"] - pool["free"]
    for sv in j.get("services", []):
        if "buffers_held" in sv:
            out["rr/%s/buffers_held" % sv["name"]] = sv["buffers_held"]
    return out


GAUGES = ("/in_use", "/buffers_held")  # values that go up and down, not counters


STARVED_NS = 5000000  # a process that waited this long for a CPU within one sample period was starved


def run_delay_ns(pid):
    """Time @pid has spent runnable but waiting for a CPU (schedstat)."""
    with open("/proc/%d/schedstat" % pid) as f:
        return int(f.read().split()[1])


def starved(procs, waits, starve):
    """Add to starve[name] each wait for a CPU of STARVED_NS or more since
    the last sample: a counter of the gaps that make a queue overflow."""
    for name, pid in procs:
        try:
            w = run_delay_ns(pid)
        except (OSError, ValueError, IndexError):
            continue
        prev = waits.get((name, pid))
        waits[(name, pid)] = w
        if prev is not None and w - prev >= STARVED_NS:
            starve[name] = starve.get(name, 0) + (w - prev) // 1000000


TICK_MS = 1000.0 / os.sysconf("SC_CLK_TCK")


def stolen(state, starve):
    """Add to starve["host/steal_ms"] each rise of STARVED_NS or more in the
    time the hypervisor took from this machine's CPUs (/proc/stat): a stall
    that no process of ours could have caused."""
    with open("/proc/stat") as f:
        steal = int(f.readline().split()[8])
    prev = state.get("steal")
    state["steal"] = steal
    if prev is not None and (steal - prev) * TICK_MS * 1000000 >= STARVED_NS:
        starve["host/steal_ms"] = starve.get("host/steal_ms", 0) + int((steal - prev) * TICK_MS)


def softnet_drops():
    with open("/proc/net/softnet_stat") as f:
        return {"host/softnet_dropped": sum(int(line.split()[1], 16) for line in f)}


def sample(a):
    sock, out = a[0], a[1]
    every = 0.05
    nss = []
    i = 2
    while i < len(a):
        if a[i] == "--every-ms":
            every = float(a[i + 1]) / 1000
        elif a[i] == "--ns":
            label, pid = a[i + 1].split(":")
            nss.append((label, int(pid)))
        i += 2
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    ctl = Ctl(sock)
    last, waits, starve, svcs = {}, {}, {}, []
    nxt = time.monotonic()
    n = 0
    with open(out, "w") as f:
        while not stop:
            cur = {}
            if n % 5 == 0:  # the pids change only with a restart: look every 5th time
                try:
                    status = ctl.status()
                    svcs = [("rr/%s" % k, st["pid"]) for k, st in status.items() if st["pid"] > 0]
                    # [service] cpu_max_pct: the periods the kernel held each to it
                    cur.update({"rr/%s/cpu_throttled" % k: st["cpu_throttled"] for k, st in status.items()
                                if st.get("cpu_throttled", -1) >= 0})
                except (OSError, ValueError, KeyError):
                    pass
            n += 1
            procs = [("%s/proc" % label, pid) for label, pid in nss] + svcs
            starved(procs, waits, starve)
            try:
                stolen(waits, starve)
            except (OSError, ValueError, IndexError):
                pass
            cur.update({k if k.startswith("host/") else "%s/cpu_starved_ms" % k: v for k, v in starve.items()})
            for label, pid in nss:
                try:
                    cur.update(ns_counters(label, pid))
                except (OSError, IndexError, ValueError):
                    pass  # the process is gone: the namespace's last values stand
            try:
                cur.update(rr_counters(ctl))
            except (OSError, ValueError):
                pass  # the supervisor is busy or gone: next time
            cur.update(softnet_drops())
            t = now_us()
            for k, v in cur.items():
                if last.get(k) != v:
                    f.write("%d %s %d\n" % (t, k, v))
                    last[k] = v
            f.flush()
            nxt += every
            time.sleep(max(0.0, nxt - time.monotonic()))
            if nxt < time.monotonic() - 1:
                nxt = time.monotonic()  # descheduled for long: no catch-up burst
    return 0


def read_samples(path):
    """Per counter, [(t_us, increase)] of every rise; a counter that went
    down started again from 0 (a restarted service): its value is the rise.
    A gauge (GAUGES) that went down just did."""
    last, rises = {}, {}
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) != 3:
                continue
            t, k, v = int(p[0]), p[1], int(p[2])
            if k in last:
                d = v - last[k] if v >= last[k] or k.endswith(GAUGES) else v
                if d > 0:
                    rises.setdefault(k, []).append((t, d))
            last[k] = v
    return rises


def stolen_in(rises, r):
    """The ms the hypervisor took from our CPUs while r's window lost."""
    if rises is None:
        return 0
    return sum(risen(rises, t0, t1 + SAMPLE_LAG_US).get("host/steal_ms", 0) for _, t0, t1 in r.get("lost_span", []))


def risen(rises, t0, t1):
    """What rose in [t0, t1), by counter."""
    out = {}
    for k, ev in rises.items():
        n = sum(d for t, d in ev if t0 <= t < t1)
        if n:
            out[k] = n
    return out


def read_rows(path):
    with open(path) as f:
        head = f.readline().rstrip("\n").split("\t")
        return [dict(zip(head, line.rstrip("\n").split("\t"))) for line in f if line.strip()]


def pct(v, p):
    if not v:
        return 0.0
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


class Flow:
    def __init__(self, name, sendlog, bitmap, svcs):
        self.name, self.svcs = name, set(svcs.split(","))
        self.gaps = []  # (first, count, t_before_us, t_after_us): faultflow recv's GAPLOG
        self.ticks = []  # (t_us, first seq)
        with open(sendlog) as f:
            for line in f:
                p = line.split()
                if len(p) == 2:
                    self.ticks.append((int(p[1]), int(p[0])))
        with open(bitmap, "rb") as f:
            self.bm = f.read()

    def seq_at(self, t):
        """The first sequence number sent at or after t."""
        lo, hi = 0, len(self.ticks)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.ticks[mid][0] < t:
                lo = mid + 1
            else:
                hi = mid
        return self.ticks[lo][1] if lo < len(self.ticks) else None

    def lost(self, s0, s1):
        """Sequence numbers in [s0, s1) that never arrived."""
        n, q = 0, s0
        while q < s1 and q % 8:  # the partial byte at the start
            n += self.missing(q)
            q += 1
        e = s1 - s1 % 8
        if q < e:  # whole bytes: missing = bits - bits set
            chunk = self.bm[q // 8:e // 8]
            n += (e - q) - bin(int.from_bytes(chunk, "little")).count("1")  # bytes past the end: all missing
            q = e
        while q < s1:
            n += self.missing(q)
            q += 1
        return n

    def load_gaps(self, path):
        with open(path) as f:
            self.gaps = sorted(tuple(int(x) for x in line.split()) for line in f if len(line.split()) == 4)

    def in_flight_at(self, s0, s1, t):
        """The first number in [s0, s1) lost while still in flight at t:
        the first hole whose next datagram arrived only after t (by the
        sink's gap log; holes are in order, the stream is FIFO). A fault at
        t into the flow's own path destroys what it holds then, datagrams
        sent a little before t: they are that fault's loss, not the window
        before it's. None if no such hole, or no gap log."""
        i = bisect.bisect_left(self.gaps, (s0,))
        while i < len(self.gaps) and self.gaps[i][0] < s1:
            first, n, _, after = self.gaps[i]
            if after >= t and self.lost(first, min(first + n, s1)):
                return first
            i += 1
        return None

    def time_of(self, s):
        """When the sender sent sequence number s (its tick's time)."""
        lo, hi = 0, len(self.ticks)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.ticks[mid][1] <= s:
                lo = mid + 1
            else:
                hi = mid
        return self.ticks[max(0, lo - 1)][0] if self.ticks else 0

    def per_ms(self):
        """Datagrams the sender sends in a millisecond (its ticks are 1 ms)."""
        if len(self.ticks) < 2:
            return 1
        return max(1, (self.ticks[-1][1] - self.ticks[0][1]) // max(1, len(self.ticks) - 1))

    def settled(self, s, run, limit):
        """The first q >= s where run datagrams in a row arrived (at most limit)."""
        q, ok = s, 0
        while q < limit:
            if self.missing(q):
                ok = 0
            else:
                ok += 1
                if ok >= run:
                    return q - run + 1
            q += 1
        return limit

    def missing(self, q):
        return 0 if q // 8 < len(self.bm) and (self.bm[q // 8] >> (q % 8)) & 1 else 1


def report(a):
    rows = read_rows(a[0])
    flows = []
    table = "--table" in a
    rises = None
    i = 1
    while i < len(a):
        if a[i] == "--flow":
            flows.append(Flow(*a[i + 1:i + 5]))
            i += 5
        elif a[i] == "--gaps":
            flows[-1].load_gaps(a[i + 1])
            i += 2
        elif a[i] == "--samples":
            rises = read_samples(a[i + 1])
            i += 2
        else:
            i += 1
    # Each flow's windows. A fault's window runs from it to the next fault,
    # and on past that while the flow is still losing what the fault did: a
    # stalled path drains its queues after the target is back, and what it
    # drops meanwhile is this fault's, not the next one's. The flow has
    # settled where 2 ms worth of datagrams in a row arrived; the next
    # window starts there. The last window ends 500 ms after its fault:
    # later datagrams are the flow's tail, which the sender may stop in.
    for r in rows:
        r["lost"], r["other_lost"], r["own"] = 0, 0, None
    for fl in flows:
        run = max(8, 2 * fl.per_ms())
        carry = None  # where the next window starts, if the last one spilled
        for k, r in enumerate(rows):
            t0 = int(r["t0_us"])
            t_next = int(rows[k + 1]["t0_us"]) if k + 1 < len(rows) else int(r["t1_us"]) + 500000
            s0, s1 = fl.seq_at(t0), fl.seq_at(t_next)
            if s0 is None or s1 is None:
                continue
            if carry is not None:
                s0 = carry
                s1 = max(s1, s0)
                carry = None
            nxt = rows[k + 1] if k + 1 < len(rows) else None
            # Not into a shared kind's window: what exhaust costs the other
            # flow is no isolation break, so nothing may move there.
            struck = nxt and nxt["svc"] in fl.svcs and nxt["kind"] != "none" and nxt["kind"] not in SHARED
            hit = fl.in_flight_at(s0, s1, t_next) if struck else None
            if hit is not None:
                s1, carry = hit, hit
            elif nxt and fl.lost(max(s0, s1 - run), s1):
                end = fl.settled(s1, run, s1 + 1000 * fl.per_ms())
                s1, carry = end, end
            lost = fl.lost(s0, s1)
            if lost:
                r.setdefault("lost_span", []).append((fl.name, t0, fl.time_of(s1)))
            if r["svc"] in fl.svcs:
                if r["own"] is None:
                    r["own"] = lost
            elif r["kind"] not in SHARED and lost:
                r["other_lost"] += lost
    for r in rows:
        r["lost"] = r.pop("own") or 0
        r["stolen"] = stolen_in(rises, r) if r["other_lost"] and r["iso"] == "-" else 0
        if r["stolen"] >= STEAL_UNJUDGED_MS:
            r["unjudged"], r["other_lost"] = r["other_lost"], 0
    control = [r for r in rows if r["kind"] == "none"]
    rows = [r for r in rows if r["kind"] != "none"]
    cells = {}
    for r in rows:
        cells.setdefault((r["kind"], r["svc"]), []).append(r)
    svcs = []
    for r in rows:
        if r["svc"] not in svcs:
            svcs.append(r["svc"])
    total_iso = total_leak = total_iso_r = 0
    all_lost = []
    if table:
        print("%-13s %-10s %6s %5s %5s %5s %8s %8s %8s %8s %9s %6s %5s" % (
            "KIND", "SERVICE", "FAULTS", "NOTOK", "ISO_R", "ISO_L", "LOST_P50", "LOST_P99", "REC_P50", "REC_P99",
            "DRAIN_P99", "LEAKED", "SUPCR"))
    for kind in KINDS:
        for svc in svcs:
            rs = cells.get((kind, svc), [])
            if not rs:
                continue
            iso_r = sum(1 for r in rs if r["iso"] != "-")
            iso_l = sum(1 for r in rs if r["iso"] == "-" and r["other_lost"])
            iso = iso_r + iso_l
            leak = sum(int(r["leaked"]) for r in rs)
            lost = [r["lost"] for r in rs]
            rec = [float(r["recovery_ms"]) for r in rs]
            drain = [float(r.get("drained_ms", r["recovery_ms"])) for r in rs]
            notok = sum(1 for r in rs if r["ok"] != "1")
            total_iso += iso
            total_iso_r += iso_r
            total_leak += leak
            all_lost += lost
            if table:
                print("%-13s %-10s %6d %5d %5d %5d %8d %8d %8.1f %8.1f %9.1f %6d %5d" % (
                    kind, svc, len(rs), notok, iso_r, iso_l, pct(lost, 50), pct(lost, 99), pct(rec, 50),
                    pct(rec, 99), pct(drain, 99), leak, 0))
    if table and control:
        for svc in svcs:
            rs = [r for r in control if r["svc"] == svc]
            if rs:
                lost = [r["lost"] for r in rs]
                print("%-13s %-10s %6d %5s %5d %5d %8d %8d %8s %8s %9s %6s %5s" % (
                    "none(control)", svc, len(rs), "-", sum(1 for r in rs if r["iso"] != "-"),
                    sum(1 for r in rs if r["iso"] == "-" and r["other_lost"]), pct(lost, 50), pct(lost, 99), "-",
                    "-", "-", "-", "-"))
    def where(r):
        """The counters that rose while a flow lost datagrams in r's window."""
        if rises is None or not r.get("lost_span"):
            return ""
        got = {}
        for _, t0, t1 in r["lost_span"]:
            # A drop is sampled up to one period (50 ms) after it, and a
            # datagram sent at t1 arrives a little later still.
            for k, n in risen(rises, t0, t1 + SAMPLE_LAG_US).items():
                got[k] = got.get(k, 0) + n
        return "; counters: " + (", ".join("%s +%d" % kv for kv in sorted(got.items())) or "none rose")

    for r in rows:
        if r["iso"] != "-" or r["other_lost"]:
            print("isolation break: %s %s %s: restarted %s, other flow lost %d%s" % (
                r["svc"], r["kind"], r["args"], r["iso"], r["other_lost"], where(r)))
    for r in control:
        if r["other_lost"]:
            print("control window: %s: other flow lost %d%s" % (r["svc"], r["other_lost"], where(r)))
    for r in rows + control:
        if r.get("unjudged"):
            print("unjudged: %s %s %s: other flow lost %d while the host took %d ms from our CPUs%s" % (
                r["svc"], r["kind"], r.get("args", ""), r["unjudged"], r["stolen"], where(r)))
    if rises is not None:
        # The whole run: every datagram lost has to be in some counter.
        # (A gauge's rises add up to nothing: it is left out here.)
        for k in sorted(k for k in rises if not k.endswith(GAUGES)):
            print("dropped_by %s %d" % (k, sum(d for _, d in rises[k])))
    if control:
        # Placebo windows: nothing injected, the same counting. Their ISO_L
        # is what the traffic loses on this machine without any fault.
        print("control_windows %d" % len(control))
        print("control_other_flow_loss_windows %d" % sum(1 for r in control if r["other_lost"]))
    print("faults_unjudged_host_steal %d" % sum(1 for r in rows + control if r.get("unjudged")))
    # The headline lines last, in the order bench/README.md gives them.
    print("faults_not_carried_out %d" % sum(1 for r in rows if r["ok"] != "1"))
    print("faults_lost_per_fault_p99 %d" % pct(all_lost, 99))
    print("faults_isolation_breaks_restart %d" % total_iso_r)
    print("faults_isolation_breaks_other_flow_loss %d" % (total_iso - total_iso_r))
    print("faults_total %d" % len(rows))
    print("faults_isolation_breaks %d" % total_iso)
    print("faults_leaked_buffers %d" % total_leak)
    print("faults_lost_per_fault_p50 %d" % pct(all_lost, 50))
    return 0


def main(a):
    if a and a[0] == "run":
        return run(a[1:])
    if a and a[0] == "sample":
        return sample(a[1:])
    if a and a[0] == "report":
        return report(a[1:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
