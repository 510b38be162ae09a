#!/usr/bin/env python3
"""A TCP (or Unix socket) proxy for tests that drops connections on purpose.

Python 3 standard library only; one process, one thread, non-blocking
sockets and a selector.  It listens on 127.0.0.1 (an ephemeral port), or
on a Unix socket, and forwards each client connection, byte for byte, to a
target on the loopback interface (an nbdkit TCP server, say) or a Unix
socket, until a drop rule says otherwise.  It is a byte proxy: TLS passes
through it untouched.

Usage:
  drop_proxy.py --listen-port-file FILE --target [HOST:]PORT [options]
  drop_proxy.py --listen-unix PATH --target unix:PATH [options]

  --listen-port-file FILE  once listening, the port number is written to
                           FILE.tmp, then renamed to FILE (wait for FILE);
                           with --listen-unix, the socket's path is.
  --listen-unix PATH       listen on a Unix socket at PATH instead of TCP
                           (a socket left there is replaced; the file is
                           removed at exit).  Required unless
                           --listen-port-file is given.
  --target [HOST:]PORT     where to connect; HOST defaults to 127.0.0.1 and
                           must be a loopback address ([::1]:PORT works);
                           unix:PATH for a Unix socket.  Either kind of
                           listener forwards to either kind of target.
  --drop-after BYTES       drop a connection once BYTES bytes have passed
                           through it, both directions counted together
                           (so a write-heavy copy, traffic mostly client ->
                           server, drops as well as a read-heavy one).
                           0 drops a connection as soon as the target
                           accepted it, before any byte.
  --drop-every BYTES       every time the traffic of all connections taken
                           together (both directions) reaches another
                           multiple of BYTES, drop the connection whose
                           bytes reached it ("one drop per 100 MiB").
  --drops N                how many drops in all (both rules together),
                           after which everything is forwarded faithfully;
                           "all" for no limit.  Default: 1, or all when
                           --drop-every is given.  With --drop-all, how
                           many times a rule fires (rounds).
  --first-conn N           the rules drop only connections accepted N-th or
                           later (the proxy numbers them from 1): with
                           --drop-after, the handshake of a copy's second
                           connection is cut, its first one left alone
                           (default 1: any connection).
  --drop-all               when a rule fires, drop every open connection at
                           once (the one whose bytes reached the limit and
                           all the others, idle or in their handshake), each
                           logged as its own "drop" line: a server that
                           closes all its connections, as one restarting
                           does.  Connections still connecting to the
                           target are left alone.
  --mode close|reset|silence
                           how a connection is dropped (default close):
                           close   FIN to both sides (shutdown), then what
                                   either sends is read and thrown away
                                   until it hangs up (5 s at most), so that
                                   the close stays a FIN and never turns
                                   into a RST (close(2) with unread data
                                   sends a RST);
                           reset   RST to the client (SO_LINGER 0, close);
                                   the server side is closed as in close
                                   mode, unless --reset-server (TCP only:
                                   a Unix socket has no RST, so reset is
                                   refused with --listen-unix);
                           silence nothing is forwarded or read any more and
                                   both sockets stay open: the client hears
                                   nothing until its own timeout.  Once the
                                   client hangs up, the server side is
                                   closed as in close mode.
  --reset-server           in reset mode, and when the client side fails,
                           reset the server side too.  By default the
                           server side always ends with a FIN: a RST makes
                           nbdkit 1.32 abort (connections.c raw_send_socket:
                           "Assertion `sock >= 0' failed") when a reply is
                           being sent, and the tests need the server alive.
  --refuse-after-drop SECONDS
                           after each drop, new connections are refused for
                           that long (a server that is down for a moment).
  --refuse-mode close|unlisten
                           how they are refused: close (default) accepts
                           and closes at once (the client sees the
                           connection end before any greeting); unlisten
                           closes the listening socket, so connect() fails
                           with ECONNREFUSED, and listens again on the same
                           port (or path: the socket file is removed
                           meanwhile) afterwards.
  --log FILE               the events, one line each, appended and flushed
                           (default: stderr).
  --lifetime SECONDS       exit after that long whatever happens (300).
  --exit-with-parent       exit when the parent process goes away.
  --buffer-size BYTES      the most read at once, and held, per connection
                           and direction (default 256K).
  --max-connections N      connections beyond N at once are refused (64).

A connection ends normally when both sides have hung up (each FIN is
passed on once what came before it is written).  An error on the server
side (ECONNRESET...) resets the client side; an error on the client side
closes the server side with a FIN (a RST with --reset-server).

BYTES take a K, M or G suffix (powers of 1024).  A byte has "passed
through" when the proxy handed it to the kernel for the other side; a drop
happens exactly at the limit: the write that reaches it is cut there, and
what the proxy had read beyond it is thrown away.

Log lines: the event name first, then key=value fields, then t=SECONDS
since the start:
  listen port=P target=H:P      (a Unix listener: port=0 path=PATH,
                                 target=unix:PATH for a Unix target)
  accept conn=C peer=H:P         (peer=unix from a Unix listener)
  connect conn=C                 the target accepted the connection
  connect-failed conn=C error=E  (the client connection is closed)
  refuse conn=C reason=after-drop|max-connections
  drop conn=C rule=drop-after|drop-every mode=M bytes=B c2s=B s2c=B total=B drops=K
                                 (--drop-all: one line per connection,
                                 drops=K the round, rule=...+all for those
                                 that did not reach the limit themselves)
  close conn=C reason=R bytes=B  both sides closed; R: eof (both hung up),
                                 client-error:E, server-error:E (the other
                                 side is reset), dropped-MODE; +drain-timeout
                                 or +client-gone may follow
  unlisten / relisten port=P
  error what=accept|relisten|fatal error=E
  exit reason=signal|lifetime|parent|relisten-failed drops=K
"bytes" is the connection's own traffic, "total" all connections', "drops"
the number of drops so far (rounds with --drop-all).  Count the
connections dropped with: grep -c '^drop '.

SIGTERM, SIGINT and SIGHUP make it stop listening, close every connection
(the server sides with a FIN, given 0.5 s to hang up in turn) and exit 0;
--lifetime and --exit-with-parent do the same.  Exit status 2: a bad
option; 1: the port could not be listened on again (unlisten) or another
fatal error.
"""

import argparse
import errno
import ipaddress
import os
import select
import selectors
import signal
import socket
import stat
import sys
import time

EV_R, EV_W = selectors.EVENT_READ, selectors.EVENT_WRITE
CLIENT, SERVER = 0, 1
SIDE = ("client", "server")
DRAIN_TIMEOUT = 5.0
EXIT_GRACE = 0.5
SILENCE_CHECK = 0.25
TCP_ESTABLISHED = 1
EMPTY = memoryview(b"")
TCP_INFO = getattr(socket, "TCP_INFO", 11 if sys.platform.startswith("linux") else None)


def parse_size(text):
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper()
    if t.endswith("IB"):
        t = t[:-2]
    elif t.endswith("B"):
        t = t[:-1]
    suffix = t[-1] if t and t[-1] in units else ""
    number = t[: len(t) - len(suffix)]
    if not number.isdigit():
        raise argparse.ArgumentTypeError(f"not a size: {text!r}")
    return int(number) * units[suffix]


def parse_drops(text):
    if text.lower() in ("all", "unlimited", "inf"):
        return None
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"not a number of drops: {text!r}")
    return int(text)


def parse_target(text):
    if text.startswith("unix:"):
        path = text[len("unix:"):]
        if not path:
            raise argparse.ArgumentTypeError(f"no path in {text!r}")
        return (socket.AF_UNIX, socket.SOCK_STREAM, 0, path, text)
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", text
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"bad port in {text!r}")
    try:
        infos = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise argparse.ArgumentTypeError(f"cannot resolve {host!r}: {e}") from None
    for family, type_, proto, _, addr in infos:
        if ipaddress.ip_address(addr[0].split("%")[0]).is_loopback:
            return (family, type_, proto, addr, f"{host}:{port}")
    raise argparse.ArgumentTypeError(f"{host!r} is not a loopback address")


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="TCP proxy on 127.0.0.1 that drops connections on purpose")
    p.add_argument("--listen-port-file", metavar="FILE")
    p.add_argument("--listen-unix", metavar="PATH")
    p.add_argument("--target", required=True, type=parse_target,
                   metavar="[HOST:]PORT|unix:PATH")
    p.add_argument("--drop-after", type=parse_size, metavar="BYTES")
    p.add_argument("--drop-every", type=parse_size, metavar="BYTES")
    p.add_argument("--drops", type=parse_drops, default=-1, metavar="N|all")
    p.add_argument("--drop-all", action="store_true")
    p.add_argument("--first-conn", type=int, default=1, metavar="N")
    p.add_argument("--mode", choices=("close", "reset", "silence"), default="close")
    p.add_argument("--refuse-after-drop", type=float, default=0.0, metavar="SECONDS")
    p.add_argument("--refuse-mode", choices=("close", "unlisten"), default="close")
    p.add_argument("--log", metavar="FILE")
    p.add_argument("--lifetime", type=float, default=300.0, metavar="SECONDS")
    p.add_argument("--exit-with-parent", action="store_true")
    p.add_argument("--buffer-size", type=parse_size, default=256 << 10, metavar="BYTES")
    p.add_argument("--max-connections", type=int, default=64, metavar="N")
    p.add_argument("--reset-server", action="store_true")
    a = p.parse_args(argv)
    if a.listen_port_file is None and a.listen_unix is None:
        p.error("one of --listen-port-file and --listen-unix is required")
    if a.listen_unix is not None and a.mode == "reset":
        p.error("--mode reset needs TCP: a Unix socket has no RST")
    if a.drops == -1:  # not given
        a.drops = None if a.drop_every is not None else 1
    if a.drop_every is not None and a.drop_every <= 0:
        p.error("--drop-every must be more than 0")
    if a.lifetime <= 0 or a.refuse_after_drop < 0:
        p.error("--lifetime must be positive, --refuse-after-drop not negative")
    if a.buffer_size < 1 or a.max_connections < 1:
        p.error("--buffer-size and --max-connections must be positive")
    return a


class Log:
    def __init__(self, path):
        self.t0 = time.monotonic()
        self.f = open(path, "a", encoding="utf-8") if path else sys.stderr

    def event(self, what, **fields):
        words = [what] + [f"{k}={v}" for k, v in fields.items()]
        words.append(f"t={time.monotonic() - self.t0:.3f}")
        self.f.write(" ".join(words) + "\n")
        self.f.flush()


def errname(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if e.errno else type(e).__name__


def set_nodelay(sock):
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:
        pass


class Conn:
    """One client connection and its connection to the target.

    Index 0 is the client side, 1 the server side: buf[i] holds what was
    read from side i (one recv into rbuf[i], the side's own buffer made
    once, and a view on it, never copied) and waits to be written to side
    1 - i; side i is read again (into rbuf[i]) once it is; sent[i] is
    what was written to side i; eof[i] says side i hung up its sending
    half; shut[i] that we hung up ours towards side i.

    The connection is connecting, open, ending or closed.  While it ends,
    each side is on its own: end[i] is "drain" (we sent a FIN and throw
    away what side i still sends until it hangs up, or its deadline),
    "silent" (nothing read or written, the socket kept open) or "closed"
    (socks[i] is None)."""

    def __init__(self, cid, client):
        self.id = cid
        self.socks = [client, None]
        self.state = "connecting"
        self.buf = [EMPTY, EMPTY]
        self.rbuf = [None, None]
        self.sent = [0, 0]
        self.eof = [False, False]
        self.shut = [False, False]
        self.mask = [0, 0]
        self.end = [None, None]
        self.deadline = [None, None]
        self.reason = None

    @property
    def traffic(self):
        return self.sent[0] + self.sent[1]


class Proxy:
    def __init__(self, args):
        self.a = args
        self.log = Log(args.log)
        self.sel = selectors.DefaultSelector()
        self.conns = {}
        self.next_id = 0
        self.total = 0
        self.drops = 0
        self.next_boundary = args.drop_every
        self.refuse_until = 0.0
        self.listener = None
        self.port = 0
        self.relisten_at = None
        self.relisten_tries = 0
        self.stop = None
        self.deadline = time.monotonic() + args.lifetime
        self.parent = os.getppid()
        self.wake_r, self.wake_w = socket.socketpair()
        self.scratch = None  # what draining sides send, thrown away
        for s in (self.wake_r, self.wake_w):
            s.setblocking(False)
        self.sel.register(self.wake_r, EV_R, "wake")

    # -- listening ---------------------------------------------------------

    def listen(self):
        path = self.a.listen_unix
        if path is not None:
            ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.remove_socket_file()
        else:
            ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            if path is not None:
                ls.bind(path)
            else:
                ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                ls.bind(("127.0.0.1", self.port))
            ls.listen(64)
        except OSError:
            ls.close()
            raise
        ls.setblocking(False)
        if path is None:
            self.port = ls.getsockname()[1]
        self.listener = ls
        self.sel.register(ls, EV_R, "listen")

    def remove_socket_file(self):
        """A Unix listener's file goes when it stops listening (a socket
        left there by anyone is replaced; anything else is an error)."""
        path = self.a.listen_unix
        if path is None:
            return
        try:
            if stat.S_ISSOCK(os.lstat(path).st_mode):
                os.unlink(path)
        except FileNotFoundError:
            pass

    def unlisten(self):
        if self.listener is not None:
            self.sel.unregister(self.listener)
            self.listener.close()
            self.listener = None
            self.remove_socket_file()
            self.log.event("unlisten")

    def try_relisten(self, now):
        try:
            self.listen()
        except OSError as e:
            self.relisten_tries += 1
            if self.relisten_tries >= 50:
                self.log.event("error", what="relisten", port=self.port, error=errname(e))
                self.stop = "relisten-failed"
            self.relisten_at = now + 0.1
            return
        self.relisten_at = None
        self.relisten_tries = 0
        self.log.event("relisten", **self.where())

    def where(self):
        if self.a.listen_unix is not None:
            return {"port": 0, "path": self.a.listen_unix}
        return {"port": self.port}

    def write_port_file(self):
        path = self.a.listen_port_file
        if path is None:
            return
        what = self.a.listen_unix if self.a.listen_unix is not None else self.port
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            f.write(f"{what}\n")
        os.replace(path + ".tmp", path)

    def accept_all(self, now):
        while self.listener is not None:
            try:
                client, peer = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:  # EMFILE and the like: try again later
                self.log.event("error", what="accept", error=errname(e))
                return
            self.next_id += 1
            cid = self.next_id
            if now < self.refuse_until or len(self.conns) >= self.a.max_connections:
                reason = "after-drop" if now < self.refuse_until else "max-connections"
                self.log.event("refuse", conn=cid, reason=reason)
                client.close()
                continue
            peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else "unix"
            self.log.event("accept", conn=cid, peer=peer)
            self.start(Conn(cid, client))

    def start(self, c):
        c.socks[CLIENT].setblocking(False)
        set_nodelay(c.socks[CLIENT])
        family, type_, proto, addr, _ = self.a.target
        server = socket.socket(family, type_, proto)
        server.setblocking(False)
        set_nodelay(server)
        c.socks[SERVER] = server
        self.conns[c.id] = c
        err = server.connect_ex(addr)
        # EAGAIN: a TCP connection under way; a Unix socket's full backlog.
        pending = (0, errno.EINPROGRESS) if family == socket.AF_UNIX else \
            (0, errno.EINPROGRESS, errno.EAGAIN)
        if err not in pending:
            self.connect_failed(c, err)
            return
        self.update(c)

    def connect_failed(self, c, err):
        self.log.event("connect-failed", conn=c.id, error=errno.errorcode.get(err, err))
        self.finish(c, "connect-failed", log=False)

    # -- interest ----------------------------------------------------------

    def update(self, c):
        if c.state == "closed":
            return
        room = [not c.buf[i] for i in (0, 1)]
        if c.state == "connecting":
            want = [EV_R if room[0] and not c.eof[0] else 0, EV_W]
        elif c.state == "open":
            want = [(EV_R if room[i] and not c.eof[i] else 0)
                    | (EV_W if c.buf[1 - i] else 0) for i in (0, 1)]
        else:  # ending
            want = [EV_R if c.end[i] == "drain" else 0 for i in (0, 1)]
        for i in (0, 1):
            sock, old, new = c.socks[i], c.mask[i], want[i]
            if sock is None or old == new:
                continue
            if old == 0:
                self.sel.register(sock, new, (c, i))
            elif new == 0:
                self.sel.unregister(sock)
            else:
                self.sel.modify(sock, new, (c, i))
            c.mask[i] = new

    # -- forwarding --------------------------------------------------------

    def on_event(self, c, i, mask):
        if c.state == "closed":
            return
        if c.state == "connecting":
            if i == SERVER and mask & EV_W:
                err = c.socks[SERVER].getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if err:
                    self.connect_failed(c, err)
                    return
                c.state = "open"
                self.log.event("connect", conn=c.id)
                self.maybe_drop(c)
                if c.state == "open":
                    self.write(c, SERVER)
            elif i == CLIENT and mask & EV_R:
                self.read(c, CLIENT)
        elif c.state == "open":
            if mask & EV_R:
                self.read(c, i)
            if c.state == "open" and mask & EV_W:
                self.write(c, i)
        elif c.end[i] == "drain":
            self.discard(c, i)
        self.update(c)

    def read(self, c, i):
        if c.buf[i] or c.eof[i]:
            return
        # Into the side's own buffer, made once: a new object per recv
        # would cost an allocation and its page faults each time (the
        # buffer is free: nothing waits in buf[i]).
        if c.rbuf[i] is None:
            c.rbuf[i] = memoryview(bytearray(self.a.buffer_size))
        try:
            n = c.socks[i].recv_into(c.rbuf[i])
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            self.abort(c, f"{SIDE[i]}-error:{errname(e)}")
            return
        if not n:
            c.eof[i] = True
        else:
            c.buf[i] = c.rbuf[i][:n]
        if c.state == "open":
            self.write(c, 1 - i)

    def write(self, c, j):
        """Write to side j what was read from the other side."""
        b = c.buf[1 - j]
        if b:
            n = len(b)
            budget = self.budget(c)
            if budget is not None:
                if budget <= 0:
                    self.maybe_drop(c)
                    return
                n = min(n, budget)
            try:
                sent = c.socks[j].send(b[:n])
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                self.abort(c, f"{SIDE[j]}-error:{errname(e)}")
                return
            b = c.buf[1 - j] = b[sent:]
            c.sent[j] += sent
            self.total += sent
            self.maybe_drop(c)
            if c.state != "open":
                return
        # An end of file is passed on once what came before it is written.
        if not b and c.eof[1 - j] and not c.shut[j]:
            c.shut[j] = True
            try:
                c.socks[j].shutdown(socket.SHUT_WR)
            except OSError as e:
                self.abort(c, f"{SIDE[j]}-error:{errname(e)}")
                return
        if all(c.shut):
            self.finish(c, "eof")

    # -- drops -------------------------------------------------------------

    def drops_left(self):
        return self.a.drops is None or self.drops < self.a.drops

    def budget(self, c):
        """How many more bytes connection c may pass before a drop."""
        if not self.drops_left() or c.id < self.a.first_conn:
            return None
        b = None
        if self.a.drop_after is not None:
            b = self.a.drop_after - c.traffic
        if self.a.drop_every is not None:
            r = self.next_boundary - self.total
            b = r if b is None else min(b, r)
        return b

    def maybe_drop(self, c):
        if c.state != "open" or not self.drops_left() or c.id < self.a.first_conn:
            return
        rule = None
        if self.a.drop_after is not None and c.traffic >= self.a.drop_after:
            rule = "drop-after"
        if self.a.drop_every is not None and self.total >= self.next_boundary:
            while self.next_boundary <= self.total:
                self.next_boundary += self.a.drop_every
            rule = rule or "drop-every"
        if rule:
            self.drop(c, rule)

    def drop(self, c, rule):
        self.drops += 1
        self.drop_one(c, rule)
        if self.a.drop_all:
            for other in list(self.conns.values()):
                if other is not c and other.state == "open":
                    self.drop_one(other, rule + "+all")
        if self.a.refuse_after_drop > 0:
            self.refuse_until = time.monotonic() + self.a.refuse_after_drop
            if self.a.refuse_mode == "unlisten":
                self.unlisten()
                self.relisten_at = self.refuse_until

    def drop_one(self, c, rule):
        mode = self.a.mode
        self.log.event("drop", conn=c.id, rule=rule, mode=mode, bytes=c.traffic,
                       c2s=c.sent[SERVER], s2c=c.sent[CLIENT], total=self.total,
                       drops=self.drops)
        if mode == "silence":
            self.end_conn(c, f"dropped-{mode}", "silent", "silent")
        else:
            server = mode if self.a.reset_server or mode != "reset" else "close"
            self.end_conn(c, f"dropped-{mode}", mode, server)

    def discard(self, c, i):
        """Side i is draining: read and forget until it hangs up."""
        if self.scratch is None:
            self.scratch = bytearray(self.a.buffer_size)
        try:
            n = c.socks[i].recv_into(self.scratch)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            n = 0
        if not n:
            c.eof[i] = True
            self.end_side(c, i, "plain")

    def client_gone(self, c):
        """Has the client of a silenced connection hung up (FIN or RST)?"""
        if c.socks[CLIENT].family == socket.AF_UNIX:
            # No TCP state: the peer's close shows as a hang-up of our
            # receiving half (what it sent before stays unread).
            p = select.poll()
            p.register(c.socks[CLIENT], select.POLLRDHUP | select.POLLHUP | select.POLLERR)
            return bool(p.poll(0))
        if TCP_INFO is None:
            return False
        try:
            info = c.socks[CLIENT].getsockopt(socket.IPPROTO_TCP, TCP_INFO, 8)
        except OSError:
            return True
        return info[0] != TCP_ESTABLISHED

    # -- the end of a connection -------------------------------------------

    def abort(self, c, reason):
        """An error on one side: the other side is reset, as its peer was
        (the server side is closed with a FIN unless --reset-server)."""
        client_failed = reason.startswith("client")
        server = "reset" if self.a.reset_server or not client_failed else "close"
        self.end_conn(c, reason, "plain" if client_failed else "reset",
                      "plain" if not client_failed else server)

    def end_conn(self, c, reason, client, server):
        """End both sides: each one "reset" (RST), "plain" (close(2)),
        "close" (FIN, then drain), or "silent"."""
        if c.state in ("ending", "closed"):
            return
        c.state = "ending"
        c.reason = reason
        c.buf = [EMPTY, EMPTY]
        for i, how in ((CLIENT, client), (SERVER, server)):
            if c.socks[i] is None:
                c.end[i] = "closed"
            elif how == "close":
                self.start_drain(c, i)
            elif how == "silent":
                c.end[i] = "silent"
                c.deadline[i] = time.monotonic() + SILENCE_CHECK if i == CLIENT else None
            else:
                self.end_side(c, i, how)
        self.update(c)

    def start_drain(self, c, i):
        if not c.shut[i]:
            c.shut[i] = True
            try:
                c.socks[i].shutdown(socket.SHUT_WR)
            except OSError:
                pass
        if c.eof[i]:  # nothing more will come: close(2) sends no RST now
            self.end_side(c, i, "plain")
            return
        c.end[i] = "drain"
        c.deadline[i] = time.monotonic() + DRAIN_TIMEOUT

    def end_side(self, c, i, how):
        """Close side i now: "reset" (RST) or "plain" (close(2): a FIN,
        or a RST when unread data is left)."""
        sock = c.socks[i]
        if sock is not None:
            if c.mask[i]:
                self.sel.unregister(sock)
                c.mask[i] = 0
            if how == "reset":
                try:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                    b"\x01\x00\x00\x00\x00\x00\x00\x00")
                except OSError:
                    pass
            sock.close()
            c.socks[i] = None
        c.end[i] = "closed"
        c.deadline[i] = None
        if c.state == "ending" and c.end == ["closed", "closed"]:
            self.closed(c)

    def closed(self, c, log=True):
        c.state = "closed"
        c.buf = [EMPTY, EMPTY]
        self.conns.pop(c.id, None)
        if log:
            self.log.event("close", conn=c.id, reason=c.reason, bytes=c.traffic)

    def finish(self, c, reason, log=True):
        """Close both sides at once with close(2)."""
        if c.state == "closed":
            return
        c.state = "closing"
        c.reason = reason
        for i in (CLIENT, SERVER):
            self.end_side(c, i, "plain")
        self.closed(c, log)

    # -- the loop ----------------------------------------------------------

    def on_signal(self, signum, _frame):
        self.stop = self.stop or "signal"

    def timers(self, now):
        if now >= self.deadline:
            self.stop = self.stop or "lifetime"
        if self.a.exit_with_parent and os.getppid() != self.parent:
            self.stop = self.stop or "parent"
        if self.relisten_at is not None and now >= self.relisten_at:
            self.try_relisten(now)
        for c in list(self.conns.values()):
            for i in (CLIENT, SERVER):
                if c.state != "ending" or c.deadline[i] is None or now < c.deadline[i]:
                    continue
                if c.end[i] == "drain":
                    c.reason += "+drain-timeout"
                    self.end_side(c, i, "plain")
                elif c.end[i] == "silent":  # the client side
                    if not self.client_gone(c):
                        c.deadline[i] = now + SILENCE_CHECK
                        continue
                    c.reason += "+client-gone"
                    if c.end[SERVER] == "silent":
                        self.start_drain(c, SERVER)
                    self.end_side(c, i, "plain")
                    self.update(c)

    def next_timeout(self, now):
        t = min(0.5, self.deadline - now)
        if self.relisten_at is not None:
            t = min(t, self.relisten_at - now)
        for c in self.conns.values():
            for d in c.deadline:
                if d is not None:
                    t = min(t, d - now)
        return max(t, 0.0)

    def run(self):
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(s, self.on_signal)
        signal.set_wakeup_fd(self.wake_w.fileno(), warn_on_full_buffer=False)
        self.listen()
        self.log.event("listen", **self.where(), target=self.a.target[4])
        self.write_port_file()
        while self.stop is None:
            self.poll(self.next_timeout(time.monotonic()))
            self.timers(time.monotonic())
        self.shutdown()

    def poll(self, timeout):
        for key, mask in self.sel.select(timeout):
            if key.data == "wake":
                try:
                    while self.wake_r.recv(64):
                        pass
                except (BlockingIOError, InterruptedError):
                    pass
            elif key.data == "listen":
                if self.stop is None:
                    self.accept_all(time.monotonic())
            else:
                self.on_event(key.data[0], key.data[1], mask)

    def shutdown(self):
        """Close everything; the server sides get EXIT_GRACE seconds to
        hang up after our FIN (a RST could kill nbdkit, see --reset-server)."""
        if self.listener is not None:
            self.sel.unregister(self.listener)
            self.listener.close()
            self.listener = None
        server = "reset" if self.a.reset_server else "close"
        for c in list(self.conns.values()):
            if c.state == "ending":
                if c.end[SERVER] == "silent":
                    self.start_drain(c, SERVER)
                if c.end[CLIENT] == "silent":
                    self.end_side(c, CLIENT, "plain")
                self.update(c)
            else:
                self.end_conn(c, "exit", "plain", server)
        deadline = time.monotonic() + EXIT_GRACE
        while self.conns and time.monotonic() < deadline:
            self.poll(max(0.0, deadline - time.monotonic()))
        for c in list(self.conns.values()):
            self.finish(c, "exit", log=False)
        self.remove_socket_file()
        self.log.event("exit", reason=self.stop, drops=self.drops)


def main(argv):
    args = parse_args(argv)
    proxy = Proxy(args)
    try:
        proxy.run()
    except OSError as e:
        proxy.log.event("error", what="fatal", error=f"{errname(e)}:{e.strerror}")
        return 1
    return 1 if proxy.stop == "relisten-failed" else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
