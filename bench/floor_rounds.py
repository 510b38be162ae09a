#!/usr/bin/env python3
"""bench/floor_rounds.py: alternating rounds of copies through a per-run server, with the
CPU of the copier and of the server apart, for a wall-time floor.

Usage: floor_rounds.py OUT.json RUNS WARMUP PREPARE NAME CMD [NAME CMD ...]

Each round runs PREPARE (a shell command, untimed; "" for none), then one command, for
every command in turn, so that the drift of a shared machine lands on all alike. A CMD is
either a plain shell command (timed whole; its CPU counts every process it waited for, a
[ CMD ] server that a copier reaps included), or

    SERVER ::: CLIENT

or a plain command holding {cpu}: a [ CMD ] copy whose server runs under
bench/served_cpu.pl {cpu} SERVER...; the server's CPU is read from that file and taken
out of the command's.

In the second form, SERVER (a shell command) is started first and must create the unix socket named by
{sock}; once the socket exists, CLIENT (a shell command, {sock} in it too) runs; SERVER must
exit when its client is gone (qemu-nbd without -t/--persistent does). The two processes are
reaped apart (wait4), so the server's CPU and the copier's are known separately; the wall
runs from the server's start to the later of the two exits, as a [ CMD ] copy's would.

Writes {"runs": N, "results": {NAME: [{"wall": s, "cpu": s, "server_cpu": s}, ...]}}, where
cpu is the command's (the CLIENT's) user + system time and server_cpu the SERVER's (0 for a
plain command without {cpu}), and exits non-zero if a command fails.
"""
import json
import os
import subprocess
import sys
import tempfile
import time


def cpu_of(rusage):
    return rusage.ru_utime + rusage.ru_stime


def fail(name, what):
    sys.exit(f"floor_rounds: {name}: {what}")


def run_plain(name, cmd, sockdir):
    cpu_file = os.path.join(sockdir, "server.cpu")
    if os.path.exists(cpu_file):
        os.unlink(cpu_file)
    cmd = cmd.replace("{cpu}", cpu_file)
    start = time.perf_counter()
    proc = subprocess.Popen(["/bin/sh", "-c", cmd], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    err = proc.stderr.read()
    _, status, rusage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    if proc.returncode != 0:
        fail(name, f"exit {proc.returncode}: {err.decode(errors='replace').strip()[-400:]}")
    server = 0.0
    if os.path.exists(cpu_file):
        with open(cpu_file) as f:
            server = float(f.read())
    return {"wall": wall, "cpu": cpu_of(rusage) - server, "server_cpu": server}


def run_served(name, server, client, sockdir):
    sock = os.path.join(sockdir, "s.sock")
    if os.path.exists(sock):
        os.unlink(sock)
    server, client = server.replace("{sock}", sock), client.replace("{sock}", sock)
    start = time.perf_counter()
    srv = subprocess.Popen(["/bin/sh", "-c", "exec " + server], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    deadline = start + 30
    while not os.path.exists(sock):
        if srv.poll() is not None or time.perf_counter() > deadline:
            srv.kill()
            fail(name, f"the server made no socket: {server}")
        time.sleep(0.001)
    cli = subprocess.Popen(["/bin/sh", "-c", client], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE)
    err = cli.stderr.read()
    _, cstatus, crusage = os.wait4(cli.pid, 0)
    _, sstatus, srusage = os.wait4(srv.pid, 0)
    cli.returncode, srv.returncode = cstatus, sstatus  # reaped here, not by Popen
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(cstatus) != 0:
        fail(name, f"exit {os.waitstatus_to_exitcode(cstatus)}: "
                   f"{err.decode(errors='replace').strip()[-400:]}")
    if os.waitstatus_to_exitcode(sstatus) != 0:
        fail(name, f"the server exited {os.waitstatus_to_exitcode(sstatus)}")
    return {"wall": wall, "cpu": cpu_of(crusage), "server_cpu": cpu_of(srusage)}


def main(argv):
    if len(argv) < 7 or (len(argv) - 5) % 2:
        sys.exit(__doc__)
    out, runs, warmup, prepare = argv[1], int(argv[2]), int(argv[3]), argv[4]
    commands = [(argv[i], argv[i + 1]) for i in range(5, len(argv), 2)]
    results = {name: [] for name, _ in commands}
    with tempfile.TemporaryDirectory(prefix="floor-rounds.") as sockdir:
        for round_number in range(warmup + runs):
            for name, cmd in commands:
                if prepare:
                    subprocess.run(["/bin/sh", "-c", prepare], check=True)
                if ":::" in cmd:
                    server, client = cmd.split(":::", 1)
                    sample = run_served(name, server.strip(), client.strip(), sockdir)
                else:
                    sample = run_plain(name, cmd, sockdir)
                if round_number >= warmup:
                    results[name].append(sample)
    with open(out, "w") as f:
        json.dump({"runs": runs, "results": results}, f)


if __name__ == "__main__":
    main(sys.argv)
