# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Read a recorded run (a .gar file: docs/record.md) with NumPy alone.

    from gpuasync import record            # or: python3 record.py run.gar
    run = record.RunFile("run.gar")
    for fr in run:                          # one record in memory at a time
        fr.header["pulse_ctl"], fr.payload  # a NumPy record, a uint8 array
        fr.descriptor, fr.subframes
    run.truncated                           # None, or why the file ends early

Needs neither libgpuasync nor the mount: the file's layout is written out
below (the same as gpuasync/record.h).  A file that ends inside a record
(a recorder killed with SIGKILL) yields every whole record and then sets
`truncated`; a record that is whole but wrong (CRC, length, number) raises
RecordError naming the frame and its byte offset.
"""
import sys
import zlib

import numpy as np

VERSION = 1
MAGIC = b"GARUN\r\n\x1a"
FRAME_MAGIC = 0x52464147  # "GAFR"
F_TIMING, F_CUT = 1, 2

FILE_DTYPE = np.dtype([
    ("magic", "S8"), ("version", "<u4"), ("header_bytes", "<u4"),
    ("record_header_bytes", "<u4"), ("dma_data_bytes", "<u4"), ("created_ns", "<u8"),
    ("card_version", "<u4"), ("flags", "<u4"), ("source", "S20"), ("crc", "<u4"),
])
RECORD_DTYPE = np.dtype([
    ("magic", "<u4"), ("bytes", "<u4"), ("number", "<u8"), ("descriptor", "u1", 8),
    ("payload_bytes", "<u4"), ("nsub", "<u2"), ("flags", "<u2"),
    ("realtime_ns", "<u8"), ("monotonic_ns", "<u8"), ("seen", "<u8"),
    ("rx_frame_count", "<u4"), ("buffer", "<u4"), ("pulse_ctl", "<u8"),
    ("th_time_ns", "<u4"), ("th_time_s", "<u4"), ("th_off", "<u4"), ("batch", "u1"),
    ("pad", "u1", 7), ("crc", "<u4"),
])
SUB_DTYPE = np.dtype([("off", "<u4"), ("size", "<u4"), ("tdest", "u1"),
                      ("tuser_first", "u1"), ("tuser_last", "u1"), ("pad", "u1")])
assert FILE_DTYPE.itemsize == 64 and RECORD_DTYPE.itemsize == 96 and SUB_DTYPE.itemsize == 12
CRC_OFF = 92


class RecordError(ValueError):
    pass


class Frame:
    """One record: header (a NumPy record of RECORD_DTYPE), descriptor
    (8 bytes), subframes (SUB_DTYPE array), payload (uint8 array)."""

    def __init__(self, header, subframes, payload):
        self.header, self.subframes, self.payload = header, subframes, payload

    @property
    def descriptor(self):
        return bytes(self.header["descriptor"])

    @property
    def size(self):
        """The size word of the descriptor (bytes the card wrote)."""
        return int.from_bytes(self.descriptor[4:8], "little")

    @property
    def pulse_id(self):
        if not self.header["flags"] & F_TIMING:
            return None
        return int(self.header["pulse_ctl"]) & 0x00FFFFFFFFFFFFFF


class RunFile:
    def __init__(self, path):
        self.path = path
        self.truncated = None
        with open(path, "rb") as f:
            raw = f.read(FILE_DTYPE.itemsize)
        if len(raw) < FILE_DTYPE.itemsize or raw[:8] != MAGIC:
            raise RecordError(f"{path}: not a recorded run")
        if zlib.crc32(raw[:60]) != int.from_bytes(raw[60:64], "little"):
            raise RecordError(f"{path}: the file header's CRC does not match")
        self.header = np.frombuffer(raw, FILE_DTYPE)[0]
        if self.header["version"] != VERSION:
            raise RecordError(f"{path}: format version {self.header['version']}, "
                              f"this reader knows {VERSION}")

    def __iter__(self):
        self.truncated = None
        with open(self.path, "rb") as f:
            f.seek(FILE_DTYPE.itemsize)
            off, number = FILE_DTYPE.itemsize, 0
            while True:
                head = f.read(RECORD_DTYPE.itemsize)
                if not head:
                    return
                where = f"{self.path}: frame {number} (record at byte {off})"
                if len(head) >= 4 and int.from_bytes(head[:4], "little") != FRAME_MAGIC:
                    raise RecordError(f"{where}: no record starts here")
                if len(head) < RECORD_DTYPE.itemsize:
                    self.truncated = f"{where}: the file ends {len(head)} bytes into it"
                    return
                h = np.frombuffer(head, RECORD_DTYPE)[0]
                nsub, plen, n = int(h["nsub"]), int(h["payload_bytes"]), int(h["bytes"])
                if nsub > 16 or n != (96 + 12 * nsub + plen + 7) & ~7:
                    raise RecordError(f"{where}: its length fields do not agree")
                if int(h["number"]) != number:
                    raise RecordError(f"{where}: it says it is frame {int(h['number'])}")
                body = f.read(n - RECORD_DTYPE.itemsize)
                if len(body) < n - RECORD_DTYPE.itemsize:
                    self.truncated = (f"{where}: the file ends {96 + len(body)} bytes "
                                      f"into its {n}")
                    return
                crc = zlib.crc32(body, zlib.crc32(head[:CRC_OFF]))
                if crc != int(h["crc"]):
                    raise RecordError(f"{where}: CRC mismatch")
                subs = np.frombuffer(body, SUB_DTYPE, count=nsub)
                payload = np.frombuffer(body, np.uint8, count=plen, offset=12 * nsub)
                yield Frame(h, subs, payload)
                off += n
                number += 1


def _main(argv):
    """record.py FILE [--dump]: a summary, or one line per frame (number,
    descriptor, payload bytes and CRC-32, pulse ID, flags, sub-frames, batch
    result) that two recordings of the same frames share."""
    if not argv or argv[0].startswith("-"):
        print("usage: record.py FILE [--dump]", file=sys.stderr)
        return 2
    try:
        run = RunFile(argv[0])
        frames = 0
        for fr in run:
            frames += 1
            if "--dump" in argv:
                p = fr.pulse_id
                print(f"{int(fr.header['number'])} {fr.descriptor.hex()} {fr.payload.size} "
                      f"{zlib.crc32(fr.payload.tobytes()):08x} "
                      f"{'-' if p is None else hex(p)} {int(fr.header['flags'])} "
                      f"{int(fr.header['nsub'])} {int(fr.header['batch'])}")
    except (OSError, RecordError) as e:
        print(f"record.py: {e}", file=sys.stderr)
        return 1
    if "--dump" not in argv:
        src = run.header["source"].decode(errors="replace")
        print(f"version {int(run.header['version'])} source {src} frames {frames}")
    if run.truncated:
        print(f"truncated: {run.truncated}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
