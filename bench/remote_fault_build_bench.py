"""Whole `kiln build` runs against remote caches that misbehave (issue 44's acceptance figures).

    python remote_fault_build_bench.py --kiln build/release/kiln [--jobs 2,8] [--cases ...]

A project of 24 C objects, each including a project header, built with a fresh local cache:
first with no remote cache (the normal time), then with KILN_REMOTE_CACHE naming each fault:

  redis-trickle  a Redis server that answers "$1000000\\r\\n", then one byte a second
  redis-flood    a Redis server that answers "$400000000\\r\\n", then the 400 MB
  http-trickle   an HTTP server with Content-Length: 1000000, then one byte a second
  http-flood     an HTTP server with Content-Length: 900000000, then the 900 MB
  dev-zero       a real redis-server whose direct-cache entries name /dev/zero as a header
  dns-hole       a cache host whose resolver never answers (a network namespace whose
                 /etc/resolv.conf names a UDP socket that never replies; needs root and unshare)

For each case and -j it prints the build's seconds, its excess over the normal time (the same
build without a remote cache, run just before it, so that both meet the same load; goal: at most
8 s), its ratio and the seconds kiln's report says it spent waiting for the remote cache, then starts the build once more,
sends SIGTERM once the server has seen the build's lookups and prints how long kiln took to exit
(goal: at most 1 s) and its exit status (143). Nothing here asserts: it measures.
"""

import argparse
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

JOBS = 24
FUNCTIONS = 100
ALL_CASES = ["redis-trickle", "redis-flood", "http-trickle", "http-flood", "dev-zero", "dns-hole"]
UNRESOLVABLE = "remote-cache.kiln-black-hole.example"


class FaultyServer:
    """A loopback listener that answers each connection's first bytes with `reply`, then
    `tail` chunks, one every `interval` seconds (0: as fast as the client reads)."""

    def __init__(self, reply, chunk, interval):
        self.reply, self.chunk, self.interval = reply, chunk, interval
        self.connections = 0
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.stopped = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stopped.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        try:
            conn.recv(65536)
            conn.sendall(self.reply)
            while not self.stopped.is_set():
                conn.sendall(self.chunk)
                if self.interval:
                    time.sleep(self.interval)
        except OSError:
            pass
        finally:
            conn.close()

    def stop(self):
        self.stopped.set()
        self.listener.close()


def faulty(case):
    if case == "redis-trickle":
        return FaultyServer(b"$1000000\r\n", b"x", 1.0), "redis"
    if case == "redis-flood":
        return FaultyServer(b"$400000000\r\n", b"x" * 65536, 0), "redis"
    head = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n"
    if case == "http-trickle":
        return FaultyServer(head.format(1000000).encode(), b"x", 1.0), "http"
    return FaultyServer(head.format(900000000).encode(), b"x" * 65536, 0), "http"


def resp(port, *words):
    """One Redis command on a fresh connection; the reply's payload (bulk, array of bulks, or the
    status line)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"*%d\r\n" % len(words) + b"".join(b"$%d\r\n%s\r\n" % (len(w), w) for w in words))
        f = s.makefile("rb")

        def one():
            line = f.readline()[:-2]
            if line[:1] == b"$":
                n = int(line[1:])
                return None if n < 0 else f.read(n + 2)[:-2]
            if line[:1] == b"*":
                return [one() for _ in range(int(line[1:]))]
            return line
        return one()


class PoisonedRedis:
    """A real redis-server filled by one read-write build, then every direct-cache entry (a list
    of "<sha256> <header>" lines, a blank line, the object) given one more header: /dev/zero."""

    def __init__(self, work):
        self.port = free_port()
        self.dir = tempfile.mkdtemp(dir=work)
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.dir], stdout=subprocess.DEVNULL)
        for _ in range(100):
            try:
                if resp(self.port, b"PING") == b"+PONG":
                    break
            except OSError:
                time.sleep(0.1)
        self.connections = 0
        self.url = "redis://127.0.0.1:%d" % self.port

    def poison(self):
        poisoned = 0
        for key in resp(self.port, b"KEYS", b"kiln:ac:*"):
            action = resp(self.port, b"GET", key)
            magic, named = action.split(b"\n", 1)
            sha, size = named.split()
            payload = resp(self.port, b"GET", b"kiln:cas:" + sha)
            # A direct-cache entry: a first line, then "<xxh128 hex> <header>" lines.
            first, rest = payload.split(b"\n", 1)
            word = rest.split(b" ", 1)[0]
            if len(word) != 32 or any(c not in b"0123456789abcdef" for c in word):
                continue  # an object, not a direct-cache entry
            payload = first + b"\n" + b"0" * 32 + b" /dev/zero\n" + rest
            new = hashlib.sha256(payload).hexdigest().encode()
            resp(self.port, b"SET", b"kiln:cas:" + new, payload)
            resp(self.port, b"SET", key, magic + b"\n" + new + b" %d\n" % len(payload))
            poisoned += 1
        return poisoned

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_project(root):
    os.makedirs(os.path.join(root, "include"))
    jobs = []
    for i in range(JOBS):
        with open(os.path.join(root, "include", "h%d.h" % i), "w") as f:
            f.write("#define SCALE_%d %d\n" % (i, 7 * i + 3))
        with open(os.path.join(root, "j%d.c" % i), "w") as f:
            f.write('#include "h%d.h"\n' % i)
            for k in range(FUNCTIONS):  # enough work that a job takes a moment at -O2
                f.write("int j%d_%d(int a) { int s = 0; for (int i = 0; i < a; ++i) s += i * %d "
                        "^ (s >> 3); return s * SCALE_%d; }\n" % (i, k, k + 1, i))
        jobs.append({"name": "j%d" % i, "kind": "object", "sources": ["j%d.c" % i],
                     "options": ["-O2", "-Iinclude"]})
    manifest = os.path.join(root, "kiln.json")
    with open(manifest, "w") as f:
        json.dump({"jobs": jobs}, f)
    return manifest


def build(args, manifest, jobs, url, prefix=(), sigterm_when=None, mode=None):
    """(seconds, exit status, first stderr line); with `sigterm_when`, the seconds from SIGTERM
    to exit instead of the build's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KILN_REMOTE_CACHE")}
    env["KILN_CACHE_DIR"] = tempfile.mkdtemp(dir=args.work)
    if url:
        env["KILN_REMOTE_CACHE"] = url
    if mode:
        env["KILN_REMOTE_CACHE_MODE"] = mode
    out = tempfile.mkdtemp(dir=args.work)
    report_path = os.path.join(out, "report.json")
    argv = list(prefix) + [args.kiln, "build", manifest, "-j", str(jobs), "--out", out,
                           "--json", report_path]
    started = time.monotonic()
    proc = subprocess.Popen(argv, env=env, cwd=os.path.dirname(manifest),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if sigterm_when is not None:
        sigterm_when()
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate()
    seconds = time.monotonic() - started
    lines = err.decode(errors="replace").strip().splitlines()
    line = (lines or [""])[0][:110]
    try:
        with open(report_path) as f:
            remote = json.load(f)["summary"].get("remote_cache") or {}
        line = "remote %.2f s, %d errors | %s" % (remote.get("seconds", 0), remote.get("errors", 0),
                                                  line)
    except (OSError, ValueError, KeyError):
        pass
    return seconds, proc.returncode, line


def waiter(server):
    def wait():
        until = time.monotonic() + 30
        while server.connections < 1 and time.monotonic() < until:
            time.sleep(0.01)
        time.sleep(0.3)  # inside the lookups
    return wait


def report(case, jobs, normal, seconds, rc, line):
    print("%-13s -j%d: %6.2f s (normal %5.2f s, +%5.2f s, x%.2f) exit %d  %s" %
          (case, jobs, seconds, normal, seconds - normal, seconds / normal, rc, line), flush=True)


def report_sigterm(case, jobs, seconds, rc):
    print("%-13s -j%d: SIGTERM to exit %.3f s, exit %d" % (case, jobs, seconds, rc), flush=True)


def run_case(args, manifest, case, normals):
    for jobs in args.jobs:
        if case == "dev-zero":
            redis = PoisonedRedis(args.work)
            try:
                env_url = redis.url
                build_rw(args, manifest, jobs, env_url)
                poisoned = redis.poison()
                normal, _, _ = build(args, manifest, jobs, None)
                seconds, rc, line = build(args, manifest, jobs, env_url)
                report(case, jobs, normal, seconds, rc, "[%d entries poisoned] %s" % (poisoned, line))
                seconds, rc, _ = build(args, manifest, jobs, env_url,
                                       sigterm_when=lambda: time.sleep(normals[jobs] / 2))
                report_sigterm(case, jobs, seconds, rc)
            finally:
                redis.stop()
            continue
        server, scheme = faulty(case)
        try:
            url = "%s://127.0.0.1:%d" % (scheme, server.port)
            normal, _, _ = build(args, manifest, jobs, None)
            seconds, rc, line = build(args, manifest, jobs, url)
            report(case, jobs, normal, seconds, rc, line)
            server.connections = 0
            seconds, rc, _ = build(args, manifest, jobs, url, sigterm_when=waiter(server))
            report_sigterm(case, jobs, seconds, rc)
        finally:
            server.stop()


def build_rw(args, manifest, jobs, url):
    build(args, manifest, jobs, url, mode="read-write")


def inside_dns_hole(args, manifest):
    """In the namespace: the black hole on 127.0.0.1:53, then the builds."""
    hole = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    hole.bind(("127.0.0.1", 53))
    for jobs in args.jobs:
        normal, _, _ = build(args, manifest, jobs, None)
        for scheme in ("redis", "http"):
            url = "%s://%s:6379" % (scheme, UNRESOLVABLE)
            seconds, rc, line = build(args, manifest, jobs, url)
            report("dns-hole " + scheme, jobs, normal, seconds, rc, line)
            seconds, rc, _ = build(args, manifest, jobs, url,
                                   sigterm_when=lambda: time.sleep(0.8))
            report_sigterm("dns-hole " + scheme, jobs, seconds, rc)


def dns_hole(args, manifest):
    if os.geteuid() != 0 or not shutil.which("unshare"):
        print("dns-hole      skipped: needs root and unshare for a network namespace", flush=True)
        return
    conf = os.path.join(args.work, "resolv.conf")
    with open(conf, "w") as f:
        f.write("nameserver 127.0.0.1\noptions timeout:5 attempts:2\n")
    script = ("ip link set lo up && mount --bind {conf} /etc/resolv.conf && exec {py} {me} "
              "--inside-dns --kiln {kiln} --work {work} --jobs {jobs} --manifest {manifest}")
    # unshare's own argv, the script run by sh within it: no shell string of ours reaches kiln.
    subprocess.run(["unshare", "--net", "--mount", "--propagation", "private", "sh", "-c",
                    script.format(conf=conf, py=sys.executable, me=os.path.abspath(__file__),
                                  kiln=args.kiln, work=args.work, manifest=manifest,
                                  jobs=",".join(map(str, args.jobs)))], check=False)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kiln", required=True)
    parser.add_argument("--jobs", default="2,8")
    parser.add_argument("--cases", default=",".join(ALL_CASES))
    parser.add_argument("--work")
    parser.add_argument("--manifest")
    parser.add_argument("--inside-dns", action="store_true")
    args = parser.parse_args()
    args.kiln = os.path.abspath(args.kiln)
    args.jobs = [int(j) for j in args.jobs.split(",")]
    if args.inside_dns:
        inside_dns_hole(args, args.manifest)
        return
    with tempfile.TemporaryDirectory() as work:
        args.work = work
        manifest = make_project(os.path.join(work, "project"))
        normals = {}
        for jobs in args.jobs:
            normals[jobs], rc, line = build(args, manifest, jobs, None)
            print("%-13s -j%d: %6.2f s exit %d %s" % ("normal", jobs, normals[jobs], rc, line),
                  flush=True)
        for case in args.cases.split(","):
            if case == "dns-hole":
                dns_hole(args, manifest)
            else:
                run_case(args, manifest, case, normals)


if __name__ == "__main__":
    main()
