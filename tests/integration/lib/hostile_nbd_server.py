#!/usr/bin/env python3
"""A small NBD server for tests that misbehaves on demand.

Python 3 standard library only.  Fixed newstyle handshake with
NBD_OPT_GO / NBD_OPT_INFO (and the old NBD_OPT_EXPORT_NAME), structured
replies, the base:allocation meta context; serves a local file (reads past
its end read as zeroes) on a unix socket, one thread per connection,
requests answered in order.  Block status is the truth about the file's
contents: 4 KiB blocks of zeroes are HOLE|ZERO, anything else data.

Usage:
  hostile_nbd_server.py --socket S --pidfile P --file F [options]

The pidfile is written once the socket listens.  --fault NAME makes the
server misbehave on the --nth (0-based, counted over every connection)
command that the fault is about; list them with --list-faults.
A client asking for an export named FAULT/NTH[/TAG] gets that fault on
its nth command instead (counted over every connection that asked for the
same name; not handshake-stall, which strikes before the name is sent):
one server serves case after case, each under a name of its own, where a
server per case cost a start each.
--error-rate OP:RATE fails that share of the OP commands (read, write,
zero, trim, flush, extents) with an error reply (--errno), at random.  --size,
--flags and --block-size advertise whatever they are told, however absurd.
"""

import os
# The C module under socket: socket's own import (enum, selectors) was a
# quarter of a start's CPU, and the tests start this server dozens of times.
import _socket
import struct
import sys
import threading

NBDMAGIC = 0x4E42444D41474943
IHAVEOPT = 0x49484156454F5054
REPLY_MAGIC = 0x3E889045565A9
REQUEST_MAGIC = 0x25609513
SIMPLE_MAGIC = 0x67446698
STRUCTURED_MAGIC = 0x668E33EF

OPT_EXPORT_NAME, OPT_ABORT, OPT_LIST = 1, 2, 3
OPT_INFO, OPT_GO, OPT_STRUCTURED_REPLY = 6, 7, 8
OPT_LIST_META_CONTEXT, OPT_SET_META_CONTEXT = 9, 10
REP_ACK, REP_SERVER, REP_INFO, REP_META_CONTEXT = 1, 2, 3, 4
REP_ERR_UNSUP, REP_ERR_INVALID = 2**31 + 1, 2**31 + 3
INFO_EXPORT, INFO_BLOCK_SIZE = 0, 3

FLAG_HAS_FLAGS, FLAG_READ_ONLY, FLAG_SEND_FLUSH = 1, 2, 4
FLAG_SEND_TRIM, FLAG_SEND_WRITE_ZEROES, FLAG_CAN_MULTI_CONN = 32, 64, 256

CMD_READ, CMD_WRITE, CMD_DISC, CMD_FLUSH, CMD_TRIM = 0, 1, 2, 3, 4
CMD_CACHE, CMD_WRITE_ZEROES, CMD_BLOCK_STATUS = 5, 6, 7
CMD_NAMES = {0: "read", 1: "write", 2: "disc", 3: "flush", 4: "trim", 5: "cache",
             6: "zero", 7: "extents"}

REPLY_FLAG_DONE = 1
TYPE_NONE, TYPE_OFFSET_DATA, TYPE_OFFSET_HOLE = 0, 1, 2
TYPE_BLOCK_STATUS, TYPE_ERROR = 5, 2**15 + 1
STATE_HOLE, STATE_ZERO = 1, 2
EIO, EINVAL, ENOSPC = 5, 22, 28
CONTEXT_ID = 0x5A5A  # deliberately not 0 or 1
ZERO_BLOCK = 4096
ZEROES = bytes(ZERO_BLOCK)

# fault name -> (the command it is about, what it does)
FAULTS = {
    "handshake-stall": (None, "accept the connection, never send the greeting"),
    "handshake-drop": (None, "send the greeting, then hang up"),
    "go-stall": (None, "never answer NBD_OPT_GO"),
    "ignore-disconnect": (None, "keep the connection open after NBD_CMD_DISC"),
    "bs-past-end": (CMD_BLOCK_STATUS, "the last extent runs 1 GiB past the end of the export"),
    "bs-past-range": (CMD_BLOCK_STATUS, "an extra 'zero' extent past the requested range (a lie)"),
    "bs-zero-length": (CMD_BLOCK_STATUS, "the reply starts with a zero-length extent"),
    "bs-zero-length-only": (CMD_BLOCK_STATUS, "the reply is one zero-length extent"),
    "bs-empty": (CMD_BLOCK_STATUS, "a block-status chunk with no extents"),
    "bs-tiny": (CMD_BLOCK_STATUS, "every reply from the nth on describes 512 bytes of data"),
    "bs-wrong-context": (CMD_BLOCK_STATUS, "the chunk names a context id never negotiated"),
    "bs-two-chunks": (CMD_BLOCK_STATUS, "two chunks for the context: 4K data, then all 'zero'"),
    "bs-error": (CMD_BLOCK_STATUS, "an EIO error reply"),
    "bs-unknown-cookie": (CMD_BLOCK_STATUS, "the reply carries a cookie never sent"),
    "read-short": (CMD_READ, "one data chunk for the first half only, then done"),
    "read-hole-short": (CMD_READ, "one hole chunk for the first half only, then done"),
    "read-long-chunk": (CMD_READ, "the data chunk carries 4 KiB more than asked"),
    "read-chunk-outside": (CMD_READ, "the data chunk lies just past the requested range"),
    "read-duplicate-chunk": (CMD_READ, "the first half sent twice, the second half never"),
    "read-simple-short": (CMD_READ, "simple reply with 512 bytes fewer than asked"),
    "read-simple-long": (CMD_READ, "simple reply with 512 bytes more than asked"),
    "read-error-zero": (CMD_READ, "an error chunk whose error number is 0"),
    "read-no-done": (CMD_READ, "the data chunk without the DONE flag, nothing after"),
    "read-unknown-cookie": (CMD_READ, "the reply carries a cookie never sent"),
    "read-duplicate-reply": (CMD_READ, "the same reply sent twice"),
    "read-wrong-magic": (CMD_READ, "the reply starts with a bad magic number"),
    "read-disconnect": (CMD_READ, "half a reply, then hang up"),
    "read-no-reply": (CMD_READ, "this read is never answered; later ones are"),
    "stall": ("any", "from the nth command on, nothing is answered"),
    "write-unknown-cookie": (CMD_WRITE, "the reply carries a cookie never sent"),
    "write-no-reply": (CMD_WRITE, "this write is never answered; later ones are"),
    "write-disconnect": (CMD_WRITE, "hang up instead of answering"),
    "write-drop": (CMD_WRITE, "acknowledge the write, store nothing"),
    "write-error-zero": (CMD_WRITE, "an error chunk whose error number is 0"),
    "zero-no-reply": (CMD_WRITE_ZEROES, "this zero is never answered"),
    "flush-no-reply": (CMD_FLUSH, "the flush is never answered"),
}


class Fault:
    """Which command the fault hits: the nth one it is about."""

    def __init__(self, name, nth):
        self.name = name
        self.nth = nth
        self.about = FAULTS[name][0] if name else None
        self.seen = 0
        self.lock = threading.Lock()

    def hits(self, cmd):
        """Counts cmd; true if the fault applies to it."""
        if self.about is None or (self.about != "any" and self.about != cmd):
            return False
        with self.lock:
            n = self.seen
            self.seen += 1
        if self.name in ("stall", "bs-tiny"):
            return n >= self.nth
        return n == self.nth


class Hangup(Exception):
    pass


def recv_exact(conn, n):
    data = bytearray()
    while len(data) < n:
        chunk = conn.recv(min(n - len(data), 1 << 20))
        if not chunk:
            raise Hangup()
        data += chunk
    return bytes(data)


class Connection:
    def __init__(self, server, conn):
        self.server = server
        self.args = server.args
        self.fault = server.fault
        self.conn = conn
        self.structured = False
        self.context_id = None

    # -- handshake --------------------------------------------------------
    def option_reply(self, option, reply_type, payload=b""):
        self.conn.sendall(struct.pack(">QIII", REPLY_MAGIC, option, reply_type, len(payload)) +
                          payload)

    def export_flags(self):
        if self.args.flags is not None:
            return self.args.flags
        flags = FLAG_HAS_FLAGS | FLAG_SEND_FLUSH
        if self.args.readonly:
            flags |= FLAG_READ_ONLY
        else:
            flags |= FLAG_SEND_TRIM | FLAG_SEND_WRITE_ZEROES
        if self.args.multi_conn:
            flags |= FLAG_CAN_MULTI_CONN
        return flags

    def handshake(self):
        """Returns True when transmission starts."""
        if self.fault.name == "handshake-stall":
            self.server.stalled.wait()
            return False
        self.conn.sendall(struct.pack(">QQH", NBDMAGIC, IHAVEOPT, 3))
        if self.fault.name == "handshake-drop":
            return False
        (client_flags,) = struct.unpack(">I", recv_exact(self.conn, 4))
        while True:
            magic, option, length = struct.unpack(">QII", recv_exact(self.conn, 16))
            data = recv_exact(self.conn, length)
            if magic != IHAVEOPT:
                return False
            if option == OPT_STRUCTURED_REPLY and not self.args.no_structured:
                self.structured = True
                self.option_reply(option, REP_ACK)
            elif option in (OPT_SET_META_CONTEXT, OPT_LIST_META_CONTEXT) and self.structured:
                self.meta_context(option, data)
            elif option in (OPT_INFO, OPT_GO):
                (name_length,) = struct.unpack_from(">I", data, 0)
                if not self.choose_fault(data[4:4 + name_length], option):
                    continue
                if option == OPT_GO and self.fault.name == "go-stall":
                    self.server.stalled.wait()
                    return False
                self.send_info(option)
                if option == OPT_GO:
                    return True
            elif option == OPT_EXPORT_NAME:
                if not self.choose_fault(data, None):
                    return False
                tail = b"" if client_flags & 2 else bytes(124)
                self.conn.sendall(struct.pack(">QH", self.args.size, self.export_flags()) + tail)
                return True
            elif option == OPT_ABORT:
                self.option_reply(option, REP_ACK)
                return False
            elif option == OPT_LIST:
                self.option_reply(option, REP_SERVER, struct.pack(">I", 0))
                self.option_reply(option, REP_ACK)
            else:
                self.option_reply(option, REP_ERR_UNSUP)

    def choose_fault(self, export, option):
        """The fault an export name FAULT/NTH[/TAG] asks for, if it does.
        False (after an error reply to option, if any) for a wrong name."""
        fault = self.server.fault_for(export.decode(errors="replace"))
        if fault is None:
            if option is not None:
                self.option_reply(option, REP_ERR_INVALID)
            return False
        self.fault = fault
        return True

    def meta_context(self, option, data):
        (name_length,) = struct.unpack_from(">I", data, 0)
        pos = 4 + name_length
        (count,) = struct.unpack_from(">I", data, pos)
        pos += 4
        for _ in range(count):
            (length,) = struct.unpack_from(">I", data, pos)
            query = data[pos + 4:pos + 4 + length].decode()
            pos += 4 + length
            if query == "base:allocation" or (option == OPT_LIST_META_CONTEXT and query == "base:"):
                if option == OPT_SET_META_CONTEXT:
                    self.context_id = CONTEXT_ID
                self.option_reply(option, REP_META_CONTEXT,
                                  struct.pack(">I", CONTEXT_ID) + b"base:allocation")
        self.option_reply(option, REP_ACK)

    def send_info(self, option):
        self.option_reply(option, REP_INFO,
                          struct.pack(">HQH", INFO_EXPORT, self.args.size, self.export_flags()))
        if self.args.block_size:
            minimum, preferred, maximum = self.args.block_size
            self.option_reply(option, REP_INFO,
                              struct.pack(">HIII", INFO_BLOCK_SIZE, minimum, preferred, maximum))
        self.option_reply(option, REP_ACK)

    # -- replies ----------------------------------------------------------
    def simple(self, cookie, error=0, data=b""):
        self.conn.sendall(struct.pack(">IIQ", SIMPLE_MAGIC, error, cookie) + data)

    def chunk(self, cookie, chunk_type, payload, done=True, magic=STRUCTURED_MAGIC):
        header = struct.pack(">IHHQI", magic, REPLY_FLAG_DONE if done else 0, chunk_type,
                             cookie, len(payload))
        self.conn.sendall(header + payload)

    def error(self, cookie, error, message=b"hostile server"):
        if self.structured:
            self.chunk(cookie, TYPE_ERROR, struct.pack(">IH", error, len(message)) + message)
        else:
            self.simple(cookie, error)

    def read_file(self, offset, length):
        data = os.pread(self.server.fd, length, offset) if offset < self.server.file_size else b""
        return data + bytes(length - len(data))

    # -- transmission -----------------------------------------------------
    def serve(self):
        while True:
            magic, flags, cmd, cookie, offset, length = struct.unpack(
                ">IHHQQI", recv_exact(self.conn, 28))
            if magic != REQUEST_MAGIC:
                return
            payload = recv_exact(self.conn, length) if cmd == CMD_WRITE else b""
            if cmd == CMD_DISC:
                if self.fault.name == "ignore-disconnect":
                    self.server.stalled.wait()
                return
            if self.fault.hits(cmd):
                if self.misbehave(self.fault.name, cmd, cookie, offset, length, payload):
                    continue
            if self.server.random_error(cmd):
                self.error(cookie, self.server.errno, b"injected error")
                continue
            self.answer(cmd, cookie, offset, length, payload)

    def answer(self, cmd, cookie, offset, length, payload):
        size = self.args.size
        if offset + length > size:
            return self.error(cookie, EINVAL, b"out of range")
        if cmd == CMD_READ:
            self.send_read(cookie, offset, self.read_file(offset, length))
        elif cmd == CMD_WRITE:
            os.pwrite(self.server.fd, payload, offset)
            self.simple(cookie)
        elif cmd in (CMD_WRITE_ZEROES, CMD_TRIM):
            os.pwrite(self.server.fd, bytes(length), offset)
            self.simple(cookie)
        elif cmd in (CMD_FLUSH, CMD_CACHE):
            self.simple(cookie)
        elif cmd == CMD_BLOCK_STATUS:
            if self.context_id is None:
                return self.error(cookie, EINVAL, b"no context negotiated")
            self.send_extents(cookie, self.context_id, self.extents(offset, length))
        else:
            self.error(cookie, EINVAL, b"unknown command")

    def send_read(self, cookie, offset, data):
        if self.structured:
            self.chunk(cookie, TYPE_OFFSET_DATA, struct.pack(">Q", offset) + data)
        else:
            self.simple(cookie, 0, data)

    def send_extents(self, cookie, context_id, extents, done=True):
        payload = struct.pack(">I", context_id)
        for length, flags in extents:
            payload += struct.pack(">II", length, flags)
        self.chunk(cookie, TYPE_BLOCK_STATUS, payload, done)

    def extents(self, offset, length):
        """The truth, merged; 4K blocks of zeroes are holes."""
        out = []
        end = offset + length
        position = offset
        file_size = self.server.file_size
        # (the file's blocks are read 1 MiB at a time: a pread per 4 KiB
        # block cost more than the test's copies)
        file_end = -(-file_size // ZERO_BLOCK) * ZERO_BLOCK
        while position < end:
            if position >= file_size:
                pieces = [(end - position, True)]
                position = end
            else:
                chunk_end = min(end, file_end, position - position % ZERO_BLOCK + (1 << 20))
                data = self.read_file(position, chunk_end - position)
                pieces = []
                at = 0
                while position < chunk_end:
                    n = min(ZERO_BLOCK - position % ZERO_BLOCK, chunk_end - position)
                    pieces.append((n, data[at:at + n] == ZEROES[:n]))
                    at += n
                    position += n
            for n, zero in pieces:
                flags = STATE_HOLE | STATE_ZERO if zero else 0
                if out and out[-1][1] == flags:
                    out[-1][0] += n
                else:
                    out.append([n, flags])
        return [(min(n, 2**32 - 4096), flags) for n, flags in out]

    def misbehave(self, name, cmd, cookie, offset, length, payload):
        """Answers (or not) the wrong way; False: answer normally after all."""
        size = self.args.size
        half = length // 2
        if name == "stall" or name.endswith("no-reply"):
            return True  # silence
        if name in ("read-disconnect", "write-disconnect"):
            if cmd == CMD_READ:
                header = struct.pack(">IHHQI", STRUCTURED_MAGIC, REPLY_FLAG_DONE,
                                     TYPE_OFFSET_DATA, cookie, 8 + length)
                self.conn.sendall(header + struct.pack(">Q", offset) +
                                  self.read_file(offset, half))
            raise Hangup()
        if name.endswith("unknown-cookie"):
            cookie ^= 0x5A5A0000
            if cmd == CMD_READ:
                self.send_read(cookie, offset, self.read_file(offset, length))
            elif cmd == CMD_BLOCK_STATUS:
                self.send_extents(cookie, self.context_id, self.extents(offset, length))
            else:
                self.simple(cookie)
            return True
        if name.endswith("error-zero"):
            if cmd == CMD_WRITE:
                pass  # store nothing
            message = b"no error at all"
            self.chunk(cookie, TYPE_ERROR, struct.pack(">IH", 0, len(message)) + message)
            return True
        if name == "write-drop":
            self.simple(cookie)
            return True
        if cmd == CMD_READ:
            return self.misbehave_read(name, cookie, offset, length)
        if cmd == CMD_BLOCK_STATUS:
            return self.misbehave_extents(name, cookie, offset, length, size)
        return False

    def misbehave_read(self, name, cookie, offset, length):
        half = length // 2
        data = self.read_file(offset, length)
        if name == "read-short":
            self.chunk(cookie, TYPE_OFFSET_DATA, struct.pack(">Q", offset) + data[:half])
        elif name == "read-hole-short":
            self.chunk(cookie, TYPE_OFFSET_HOLE, struct.pack(">QI", offset, half))
        elif name == "read-long-chunk":
            extra = self.read_file(offset + length, 4096)
            self.chunk(cookie, TYPE_OFFSET_DATA, struct.pack(">Q", offset) + data + extra)
        elif name == "read-chunk-outside":
            self.chunk(cookie, TYPE_OFFSET_DATA, struct.pack(">Q", offset + length) + data)
        elif name == "read-duplicate-chunk":
            first = struct.pack(">Q", offset) + data[:half]
            self.chunk(cookie, TYPE_OFFSET_DATA, first, done=False)
            self.chunk(cookie, TYPE_OFFSET_DATA, first)
        elif name == "read-simple-short":
            self.simple(cookie, 0, data[:max(0, length - 512)])
        elif name == "read-simple-long":
            self.simple(cookie, 0, data + bytes(512))
        elif name == "read-no-done":
            self.chunk(cookie, TYPE_OFFSET_DATA, struct.pack(">Q", offset) + data, done=False)
        elif name == "read-duplicate-reply":
            self.send_read(cookie, offset, data)
            self.send_read(cookie, offset, data)
        elif name == "read-wrong-magic":
            self.chunk(cookie, TYPE_OFFSET_DATA, struct.pack(">Q", offset) + data,
                       magic=0xDEADBEEF)
        else:
            return False
        return True

    def misbehave_extents(self, name, cookie, offset, length, size):
        truth = self.extents(offset, length)
        context = self.context_id
        if name == "bs-past-end":
            if offset + length < size:  # only a request reaching the end can
                return False
            last_length, last_flags = truth[-1]
            truth[-1] = (min(last_length + (1 << 30), 2**32 - 4096), last_flags)
            truth.append((1 << 20, STATE_HOLE | STATE_ZERO))
        elif name == "bs-past-range":
            truth.append((1 << 20, STATE_HOLE | STATE_ZERO))
        elif name == "bs-zero-length":
            truth.insert(0, (0, STATE_HOLE | STATE_ZERO))
        elif name == "bs-zero-length-only":
            truth = [(0, STATE_HOLE | STATE_ZERO)]
        elif name == "bs-empty":
            truth = []
        elif name == "bs-tiny":
            truth = [(min(512, length), 0)]
        elif name == "bs-wrong-context":
            context = CONTEXT_ID + 1
        elif name == "bs-two-chunks":
            self.send_extents(cookie, context, [(min(4096, length), 0)], done=False)
            truth = [(length, STATE_HOLE | STATE_ZERO)]
        elif name == "bs-error":
            self.error(cookie, EIO, b"block status failed")
            return True
        else:
            return False
        self.send_extents(cookie, context, truth)
        return True

    def run(self):
        try:
            if self.handshake():
                self.serve()
        except (Hangup, ConnectionError, struct.error):
            pass
        finally:
            self.conn.close()


class Server:
    def __init__(self, args):
        self.args = args
        self.fault = Fault(args.fault, args.nth)
        self.faults = {}  # export name FAULT/NTH[/TAG] -> its Fault
        self.faults_lock = threading.Lock()
        self.stalled = threading.Event()  # never set: stalls wait forever
        names = {name: cmd for cmd, name in CMD_NAMES.items()}
        self.error_rates = {names[op]: rate for op, rate in args.error_rate or []}
        self.errno = {"EIO": EIO, "ENOSPC": ENOSPC, "EINVAL": EINVAL}[args.errno]
        if self.error_rates:  # (random's import costs a start a little)
            import random
            self.random = random.Random(args.seed)
        self.random_lock = threading.Lock()
        mode = os.O_RDONLY if args.readonly else os.O_RDWR
        self.fd = os.open(args.file, mode)
        self.file_size = os.fstat(self.fd).st_size
        if args.size is None:
            args.size = self.file_size

    def fault_for(self, export):
        """The Fault for connections to this export: --fault's, or the one
        its name asks for (the same for every connection to the name);
        None for a name that asks for none that could be."""
        if "/" not in export:
            return self.fault
        name, _, rest = export.partition("/")
        nth = rest.partition("/")[0]
        if name not in FAULTS or name == "handshake-stall" or not nth.isdigit():
            return None
        with self.faults_lock:
            return self.faults.setdefault(export, Fault(name, int(nth)))

    def random_error(self, cmd):
        """Whether to fail cmd, at its --error-rate."""
        rate = self.error_rates.get(cmd, 0)
        with self.random_lock:
            return rate > 0 and self.random.random() < rate

    def run(self):
        listener = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        listener.bind(self.args.socket)
        listener.listen(16)
        with open(self.args.pidfile + ".tmp", "w") as f:
            f.write(f"{os.getpid()}\n")
        os.rename(self.args.pidfile + ".tmp", self.args.pidfile)
        while True:
            fd, _ = listener._accept()
            conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM, 0, fd)
            threading.Thread(target=Connection(self, conn).run, daemon=True).start()


# The options by hand, not with argparse: the tests start this server once
# per case, and argparse (with the re, shutil and gettext it imports) took
# a third of each start's CPU.
USAGE = """usage: hostile_nbd_server.py --socket S --pidfile P --file F [--size N]
    [--flags N] [--block-size MIN,PREFERRED,MAX] [--readonly] [--multi-conn]
    [--no-structured] [--fault NAME] [--nth N] [--error-rate OP:RATE]...
    [--errno EIO|ENOSPC|EINVAL] [--seed N] [--list-faults]"""


class UsageError(Exception):
    pass


def block_sizes(text):
    values = [int(v, 0) for v in text.split(",")]
    if len(values) != 3:
        raise UsageError("want MIN,PREFERRED,MAX")
    return values


def error_rate(text):
    op, _, rate = text.partition(":")
    if op not in CMD_NAMES.values():
        raise UsageError(f"unknown operation {op!r}")
    return op, float(rate)


def choice(names):
    def check(text):
        if text not in names:
            raise UsageError(f"invalid choice {text!r} (choose from {', '.join(names)})")
        return text
    return check


def number(text):
    return int(text, 0)


# option -> (attribute, how its value is read; None: a flag)
OPTIONS = {
    "--socket": ("socket", str),
    "--pidfile": ("pidfile", str),
    "--file": ("file", str),
    "--size": ("size", number),  # advertised size
    "--flags": ("flags", number),  # raw transmission flags
    "--block-size": ("block_size", block_sizes),  # MIN,PREFERRED,MAX to advertise
    "--readonly": ("readonly", None),
    "--multi-conn": ("multi_conn", None),
    "--no-structured": ("no_structured", None),  # refuse structured replies
    "--fault": ("fault", choice(sorted(FAULTS))),  # how to misbehave
    "--nth": ("nth", int),  # on which command of its kind
    "--error-rate": ("error_rate", error_rate),  # OP:RATE (appends), fail that share of OP
    "--errno": ("errno", choice(["EIO", "ENOSPC", "EINVAL"])),
    "--seed": ("seed", int),  # for --error-rate
    "--list-faults": ("list_faults", None),
}


class Args:
    def __init__(self):
        self.socket = self.pidfile = self.file = None
        self.size = self.flags = self.block_size = self.fault = None
        self.readonly = self.multi_conn = self.no_structured = self.list_faults = False
        self.nth, self.error_rate, self.errno, self.seed = 0, None, "EIO", 1


def parse_args(argv):
    """Like argparse did: --opt VALUE or --opt=VALUE; UsageError if wrong."""
    args = Args()
    i = 0
    while i < len(argv):
        word = argv[i]
        i += 1
        name, eq, value = word.partition("=")
        if word in ("-h", "--help"):
            print(USAGE)
            sys.exit(0)
        if name not in OPTIONS:
            raise UsageError(f"unrecognized argument: {word}")
        attribute, read = OPTIONS[name]
        if read is None:
            if eq:
                raise UsageError(f"{name}: takes no value")
            setattr(args, attribute, True)
            continue
        if not eq:
            if i == len(argv):
                raise UsageError(f"{name}: expected a value")
            value = argv[i]
            i += 1
        try:
            value = read(value)
        except ValueError as e:
            raise UsageError(f"{name}: invalid value {value!r}: {e}") from None
        if attribute == "error_rate":
            args.error_rate = (args.error_rate or []) + [value]
        else:
            setattr(args, attribute, value)
    return args


def main():
    try:
        args = parse_args(sys.argv[1:])
        if args.list_faults:
            for name in sorted(FAULTS):
                about = FAULTS[name][0]
                print(f"{name:22} {CMD_NAMES.get(about, about or 'handshake'):9} "
                      f"{FAULTS[name][1]}")
            return 0
        if not (args.socket and args.pidfile and args.file):
            raise UsageError("--socket, --pidfile and --file are required")
    except UsageError as e:
        print(f"{USAGE}\nhostile_nbd_server.py: error: {e}", file=sys.stderr)
        return 2
    Server(args).run()


if __name__ == "__main__":
    sys.exit(main())
