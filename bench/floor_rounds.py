#!/usr/bin/env python3
"""bench/floor_rounds.py: alternating rounds of copies through a per-run server, with the
CPU of the copier and of the server apart, for a wall-time floor.

Usage: floor_rounds.py [--rotate] [--also PIDFILE]... [--root DIR] [--stop-server]
                      OUT.json RUNS WARMUP PREPARE NAME CMD [NAME CMD ...]

Each round runs PREPARE (a shell command, untimed; "" for none) before every command, and
every command once, in order (bench/roundlib.py). A CMD is a shell command, timed whole
(its CPU counts every process it waited for, a [ CMD ] server that a copier reaps
included), or

    SERVER ::: CLIENT

SERVER (a shell command) is started first and must create the unix socket named by {sock};
once the socket exists, CLIENT (a shell command, {sock} in it too) runs. SERVER must exit
when its client is gone (qemu-nbd without -t/--persistent does). The two are reaped apart
(wait4), so the server's CPU and the copier's are known separately, and the server's main
thread's CPU is read from /proc/PID/task/PID/stat between its exit and its reaping (the
thread that serializes qemu-nbd's requests; its worker threads are the rest). The wall runs
from the server's start to the later of the two exits, as a [ CMD ] copy's would.

--rotate starts round k at the k-th command (roundlib.alternate): no command always runs
right after the same one.

--also PIDFILE names a server that outlives the rounds (an nbdkit source, started once):
it is not ours to reap, but it shares the two cores, so the CPU it spends while a command
runs (the growth of utime + stime in /proc/PID/stat, all its threads, in clock ticks) is
taken as also_cpu. It may be given more than once (servers of two generations, one of
them idle at a time): also_cpu is their sum.

--root DIR puts {sock} under DIR (a chroot, such as the Debian 13 root of bench/
generations.sh), so that a server or client run by `chroot DIR` reaches it as {rsock}, the
same path seen from inside DIR; {sock} stays the path from outside.

--stop-server: the SERVER does not exit when its client is gone (nbdkit): once the CLIENT
has exited, the server gets SIGTERM, and is then reaped as usual.

Writes {"runs": N, "results": {NAME: [sample, ...]}}, a sample being {"wall": s, "cpu": s,
"rss_kib": n, "server_cpu": s, "server_main_cpu": s, "also_cpu": s, "minflt": n, "nvcsw": n,
"nivcsw": n} (with a served CMD also server_minflt, server_nvcsw and server_nivcsw: the
page faults and voluntary and involuntary context switches of each, from wait4): cpu is the command's
(the CLIENT's) user + system time, rss_kib the peak RSS of its largest process
(/usr/bin/time's %M: a direct child of this script would count the interpreter it was
forked from), the server's two are 0 for a plain command, and also_cpu is 0 without
--also. Exits non-zero if a command fails.
"""
import os
import subprocess
import sys
import tempfile
import time

import roundlib

TICKS = os.sysconf("SC_CLK_TCK")


def stat_cpu(stat_path):
    """utime + stime in seconds from a /proc stat file: /proc/PID/stat for the whole thread
    group, /proc/PID/task/TID/stat for one thread."""
    with open(stat_path) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def cpu_of(rusage):
    return rusage.ru_utime + rusage.ru_stime


TIME = "/usr/bin/time"


def shell(cmd, stderr, rss_file=None):
    """/bin/sh -c CMD; with RSS_FILE, under /usr/bin/time, which writes the peak RSS in KiB
    of the largest process of CMD there."""
    argv = ["/bin/sh", "-c", cmd]
    if rss_file:
        argv = [TIME, "-f", "%M", "-o", rss_file] + argv
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=stderr)


def peak_rss(rss_file):
    """The last line of /usr/bin/time's output file (a failure is noted on the line above)."""
    with open(rss_file) as f:
        lines = f.read().split()
    return int(lines[-1]) if lines and lines[-1].isdigit() else None


def counters(rusage, prefix=""):
    """Figures robust to the machine's load: page faults and context switches (voluntary:
    waits for I/O or a lock; involuntary: preempted)."""
    return {prefix + "minflt": rusage.ru_minflt, prefix + "nvcsw": rusage.ru_nvcsw,
            prefix + "nivcsw": rusage.ru_nivcsw}


def reap(proc):
    """Waits for PROC; returns (exit code, CPU of its main thread, CPU of all of it, its
    rusage)."""
    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # a zombie keeps its times
    main_thread = stat_cpu(f"/proc/{proc.pid}/task/{proc.pid}/stat")
    _, status, rusage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    return proc.returncode, main_thread, cpu_of(rusage), rusage


def run_plain(name, cmd, rss_file):
    start = time.perf_counter()
    proc = shell(cmd, subprocess.PIPE, rss_file)
    err = proc.stderr.read()
    code, _, cpu, rusage = reap(proc)
    wall = time.perf_counter() - start
    roundlib.check_exit("floor_rounds", name, code, err)
    return {"wall": wall, "cpu": cpu, "rss_kib": peak_rss(rss_file), "server_cpu": 0.0,
            "server_main_cpu": 0.0, **counters(rusage)}


def with_socket(cmd, sock, rsock):
    return cmd.replace("{rsock}", rsock).replace("{sock}", sock)


def run_served(name, server, client, sock, rsock, rss_file, stop_server):
    if os.path.exists(sock):
        os.unlink(sock)
    server, client = with_socket(server, sock, rsock), with_socket(client, sock, rsock)
    start = time.perf_counter()
    srv = shell("exec " + server, subprocess.DEVNULL)
    deadline = start + 30
    while not os.path.exists(sock):
        if srv.poll() is not None or time.perf_counter() > deadline:
            srv.kill()
            sys.exit(f"floor_rounds: {name}: the server made no socket: {server}")
        time.sleep(0.001)
    cli = shell(client, subprocess.PIPE, rss_file)
    err = cli.stderr.read()
    code, _, cpu, rusage = reap(cli)
    if stop_server:
        srv.terminate()
    server_code, server_main, server_cpu, server_rusage = reap(srv)
    wall = time.perf_counter() - start
    roundlib.check_exit("floor_rounds", name, code, err)
    roundlib.check_exit("floor_rounds", name, server_code, b"", what="'s server")
    return {"wall": wall, "cpu": cpu, "rss_kib": peak_rss(rss_file), "server_cpu": server_cpu,
            "server_main_cpu": server_main, **counters(rusage),
            **counters(server_rusage, "server_")}


def options(argv):
    """The leading options of argv: (rotate, [also pid], root or None, stop_server, rest)."""
    rotate, also_pids, root, stop_server = False, [], None, False
    while len(argv) > 1 and argv[1].startswith("--"):
        if argv[1] == "--rotate":
            rotate, argv = True, argv[:1] + argv[2:]
        elif argv[1] == "--stop-server":
            stop_server, argv = True, argv[:1] + argv[2:]
        elif argv[1] == "--also" and len(argv) > 2:
            with open(argv[2]) as f:
                also_pids.append(int(f.read().strip()))
            argv = argv[:1] + argv[3:]
        elif argv[1] == "--root" and len(argv) > 2:
            root, argv = os.path.realpath(argv[2]), argv[:1] + argv[3:]
        else:
            sys.exit(__doc__)
    return rotate, also_pids, root, stop_server, argv


def also_cpu(pids):
    return sum(stat_cpu(f"/proc/{pid}/stat") for pid in pids)


def main(argv):
    rotate, also_pids, root, stop_server, argv = options(argv)
    commands = roundlib.parse_commands(argv, 5, __doc__)
    runs, warmup, prepare = int(argv[2]), int(argv[3]), argv[4]
    tmp_parent = os.path.join(root, "tmp") if root else None
    with tempfile.TemporaryDirectory(prefix="floor-rounds.", dir=tmp_parent) as sockdir:
        sock = os.path.join(sockdir, "s.sock")
        rsock = "/" + os.path.relpath(sock, root) if root else sock
        rss_file = os.path.join(sockdir, "rss")

        def measure(name, cmd):
            also_before = also_cpu(also_pids)
            if ":::" not in cmd:
                sample = run_plain(name, with_socket(cmd, sock, rsock), rss_file)
            else:
                server, client = cmd.split(":::", 1)
                sample = run_served(name, server.strip(), client.strip(), sock, rsock,
                                    rss_file, stop_server)
            sample["also_cpu"] = also_cpu(also_pids) - also_before
            return sample

        def before_each():
            subprocess.run(["/bin/sh", "-c", prepare], check=True)

        results = roundlib.alternate(commands, runs, warmup, measure,
                                     before_each if prepare else None, rotate)
    roundlib.write(argv[1], runs, "results", results)


if __name__ == "__main__":
    main(sys.argv)
