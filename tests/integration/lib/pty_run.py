#!/usr/bin/env python3
"""Runs a command on a pseudo-terminal (stdin, stdout and stderr), saving
everything it prints to OUTFILE; exits with its exit status (128 + N if a
signal N killed it).

usage: pty_run.py [--columns N] [--touch-after REGEX FILE]
                 [--ctrl-c-after REGEX | --hang-up-after REGEX] OUTFILE CMD [ARGS...]

--columns: the terminal's width (default: whatever the system gives).

--touch-after: once the output matches REGEX, create FILE (a trigger for a
server's fault injection, such as nbdkit's error filter's error-file).

--ctrl-c-after: once the output matches REGEX, type Ctrl-C on the terminal,
as a user would (the line discipline sends SIGINT to the whole foreground
process group). --hang-up-after: once the output matches REGEX, close the
terminal (the kernel sends SIGHUP to the command, its session leader) and
save what was printed until then. A watchdog ends the run after 120 s (exit status 124).
"""
import fcntl
import os
import pty
import struct
import termios
import re
import select
import signal
import sys
import time

WATCHDOG_SECONDS = 120


def main():
    args = sys.argv[1:]
    ctrl_c_after = None
    columns = None
    if args[0] == "--columns":
        columns = int(args[1])
        args = args[2:]
    touch_after = None
    if args[0] == "--touch-after":
        touch_after = (re.compile(args[1].encode()), args[2])
        args = args[3:]
    hang_up_after = None
    if args[0] == "--ctrl-c-after":
        ctrl_c_after = re.compile(args[1].encode())
        args = args[2:]
    elif args[0] == "--hang-up-after":
        hang_up_after = re.compile(args[1].encode())
        args = args[2:]
    outfile, command = args[0], args[1:]

    pid, master = pty.fork()
    if pid == 0:
        if columns:
            fcntl.ioctl(1, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
        os.execvp(command[0], command)
    output = b""
    typed = False
    deadline = time.monotonic() + WATCHDOG_SECONDS
    while True:
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            open(outfile, "wb").write(output)
            sys.exit(124)
        ready, _, _ = select.select([master], [], [], 1.0)
        if not ready:
            continue
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        output += chunk
        if touch_after and touch_after[0].search(output):
            open(touch_after[1], "w").close()
            touch_after = None
        if ctrl_c_after and not typed and ctrl_c_after.search(output):
            os.write(master, b"\x03")
            typed = True
        if hang_up_after and hang_up_after.search(output):
            os.close(master)
            break
    _, status = os.waitpid(pid, 0)
    open(outfile, "wb").write(output)
    if os.WIFSIGNALED(status):
        sys.exit(128 + os.WTERMSIG(status))
    sys.exit(os.WEXITSTATUS(status))


if __name__ == "__main__":
    main()
