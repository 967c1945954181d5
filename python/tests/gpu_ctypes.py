"""libdetcoll-nccl loaded by path with ctypes, as vLLM's and SGLang's NCCL
wrappers load the library their *_NCCL_SO_PATH names (the GPU machine's
check). No LD_PRELOAD: torch.distributed runs on gloo only, to hand out the
unique id and to gather inputs for the reference; every NCCL call is this
file's, through ctypes, on torch tensors' device pointers and torch's
current stream, as pynccl makes them.

    DETCOLL_NCCL_LIB=/path/libdetcoll-nccl.so torchrun --nproc-per-node W tests/gpu_ctypes.py OUT.json

Checks (each against detcoll's reference tree, computed in Python):
all-reduce of the four float types at odd sizes, in place and not, and over
the capacity (split); reduce-scatter, and over the capacity (pieces
gathered); Reduce to every root, and a group of Reduce with roots 0..W-1
(vLLM's reduce-scatterv); a group of a receive larger than NCCL's buffers
and an all-reduce, whose peer sends before its own all-reduce (it completes
under NCCL: the group's operations run together); calls of one
communicator on two streams without a wait, the first stream held back by
a sleeping kernel (NCCL orders them). Writes OUT.json.RANK; exits 1 on any
failure.
"""

import ctypes
import json
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from detcoll import _lib  # noqa: E402
from detcoll import torch as dtorch  # noqa: E402

# ncclDataType_t and ncclRedOp_t values (nccl.h).
NCCL_TYPE = {torch.int32: 2, torch.float16: 6, torch.float32: 7, torch.float64: 8, torch.bfloat16: 9}
SUM, MAX = 0, 2


class NcclUniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_byte * 128)]


class Nccl:
    """The few NCCL functions pynccl binds, by ctypes, from a library path."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)  # RTLD_LOCAL, as vLLM loads it
        P, I, Z = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
        sig = {
            "ncclGetUniqueId": [ctypes.POINTER(NcclUniqueId)],
            "ncclCommInitRank": [ctypes.POINTER(P), I, NcclUniqueId, I],
            "ncclCommDestroy": [P],
            "ncclCommGetAsyncError": [P, ctypes.POINTER(I)],
            "ncclAllReduce": [P, P, Z, I, I, P, P],
            "ncclReduceScatter": [P, P, Z, I, I, P, P],
            "ncclReduce": [P, P, Z, I, I, I, P, P],
            "ncclSend": [P, Z, I, I, P, P],
            "ncclRecv": [P, Z, I, I, P, P],
            "ncclGroupStart": [],
            "ncclGroupEnd": [],
        }
        for name, args in sig.items():
            f = getattr(self.lib, name)
            f.argtypes, f.restype = args, I
        self.lib.ncclGetErrorString.restype = ctypes.c_char_p
        self.lib.ncclGetErrorString.argtypes = [I]
        self.lib.ncclGetLastError.restype = ctypes.c_char_p
        self.lib.ncclGetLastError.argtypes = [P]
        self.comm = None

    def check(self, name, *args):
        r = getattr(self.lib, name)(*args)
        if r != 0:
            raise RuntimeError(f"{name}: {r} {self.lib.ncclGetErrorString(r).decode()}: "
                               f"{self.lib.ncclGetLastError(self.comm).decode()}")

    def stream(self):
        return ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)


def ptr(t):
    return ctypes.c_void_p(t.data_ptr())


results = []


def check(name):
    def wrap(f):
        t0 = time.time()
        try:
            results.append({"check": name, "ok": True, "detail": f(), "s": round(time.time() - t0, 3)})
        except Exception as e:  # noqa: BLE001 - every failure is reported
            results.append({"check": name, "ok": False, "error": f"{type(e).__name__}: {e}",
                            "trace": traceback.format_exc(), "s": round(time.time() - t0, 3)})
        return f
    return wrap


def main():
    out = sys.argv[1]
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)) % torch.cuda.device_count())
    torch.cuda.set_device(dev)
    path = _lib.library_path()
    nccl = Nccl(path)
    uid = NcclUniqueId()
    if rank == 0:
        nccl.check("ncclGetUniqueId", ctypes.byref(uid))
    box = [bytes(uid.internal) if rank == 0 else None]
    dist.broadcast_object_list(box, src=0)
    ctypes.memmove(uid.internal, box[0], 128)
    comm = ctypes.c_void_p()
    nccl.check("ncclCommInitRank", ctypes.byref(comm), world, uid, rank)
    nccl.comm = comm
    info = {"rank": rank, "world": world, "library": path, "loaded_by": "ctypes.CDLL (RTLD_LOCAL)",
            "preloaded": bool(os.environ.get("LD_PRELOAD")), "torch": torch.__version__,
            "device": torch.cuda.get_device_name(dev)}

    def rand(n, dt, salt):
        g = torch.Generator().manual_seed(777 + 7919 * salt + 104729 * rank)
        return (torch.randn(n, generator=g, dtype=torch.float64) * 3).to(dt)

    def reference(x, op="sum"):
        everyone = [torch.empty_like(x) for _ in range(world)]
        dist.all_gather(everyone, x)  # gloo, on the CPU: bytes, exact
        return dtorch._int_view(dtorch.reference(everyone, op))

    def bits(t):
        return dtorch._int_view(t.cpu())

    def same(got, want, what):
        if not torch.equal(got, want):
            i = int((got != want).nonzero()[0])
            raise AssertionError(f"{what}: element {i}: got {int(got[i]):#x}, want {int(want[i]):#x}")

    def wait(what, seconds=120):
        """Waits for the current stream with a deadline: a hang is a failure, not a stuck test."""
        ev = torch.cuda.Event()
        ev.record()
        end = time.time() + seconds
        while not ev.query():
            if time.time() > end:
                raise TimeoutError(f"{what}: not done after {seconds} s (a deadlock)")
            time.sleep(0.001)

    @check("all_reduce: the four float types, odd sizes, in place and not, over the capacity")
    def _():
        rows = 0
        for dt in (torch.bfloat16, torch.float16, torch.float32, torch.float64):
            for n in (1, 1001, 65537, (5 << 20) // dt.itemsize + 3):  # the last is over the 17 MiB capacity
                x = rand(n, dt, n)
                want = reference(x)
                a, b = x.cuda(), torch.full((n,), 7, dtype=dt, device=dev)
                nccl.check("ncclAllReduce", ptr(a), ptr(b), n, NCCL_TYPE[dt], SUM, comm, nccl.stream())
                nccl.check("ncclAllReduce", ptr(a), ptr(a), n, NCCL_TYPE[dt], SUM, comm, nccl.stream())
                wait("all_reduce")
                same(bits(b), want, f"{dt} n={n} out of place")
                same(bits(a), want, f"{dt} n={n} in place")
                rows += 1
        return f"{rows} rows"

    @check("reduce_scatter: the reference's shard, and over the capacity (pieces gathered)")
    def _():
        for dt, n in ((torch.bfloat16, 4099), (torch.float32, (24 << 20) // 4 // world + 5)):
            x = rand(n * world, dt, 11)
            want = reference(x)[rank * n:(rank + 1) * n]
            y = torch.full((n,), 7, dtype=dt, device=dev)
            nccl.check("ncclReduceScatter", ptr(x.cuda()), ptr(y), n, NCCL_TYPE[dt], SUM, comm, nccl.stream())
            wait("reduce_scatter")
            same(bits(y), want, f"{dt} recvcount={n}")
        return "ok"

    @check("reduce to every root; others' recvbuff NULL")
    def _():
        x = rand(3001, torch.float32, 12)
        want = reference(x)
        xd = x.cuda()
        for root in list(range(world)) + [0]:
            y = torch.full((3001,), 7, dtype=torch.float32, device=dev)
            recv = ptr(y) if rank == root else ctypes.c_void_p(0)
            nccl.check("ncclReduce", ptr(xd), recv, 3001, NCCL_TYPE[torch.float32], SUM, root, comm, nccl.stream())
            wait(f"reduce to {root}")
            if rank == root:
                same(bits(y), want, f"root {root}")
            same(bits(xd), bits(x), "the input changed")
        return f"roots {list(range(world))} and 0 again"

    @check("a group of Reduce with roots 0..W-1 (vLLM's reduce-scatterv)")
    def _():
        sizes = [1000 + 17 * r for r in range(world)]
        x = rand(sum(sizes), torch.bfloat16, 13)
        want = reference(x)
        xd = x.cuda()
        outs, off = [], 0
        nccl.check("ncclGroupStart")
        for root, n in enumerate(sizes):
            y = torch.full((n,), 7, dtype=torch.bfloat16, device=dev)
            outs.append((root, off, n, y))
            nccl.check("ncclReduce", ctypes.c_void_p(xd.data_ptr() + off * 2), ptr(y), n, NCCL_TYPE[torch.bfloat16],
                       SUM, root, comm, nccl.stream())
            off += n
        nccl.check("ncclGroupEnd")
        wait("reduce-scatterv")
        root, off, n, y = outs[rank]
        same(bits(y), want[off:off + n], "this rank's part")
        return f"parts {sizes}"

    @check("a group of a large receive and an all-reduce; the peer sends first (completes under NCCL)")
    def _():
        if world < 2:
            return "skipped at W=1 (no peer)"
        big = 64 << 20  # bytes: beyond NCCL's buffers, so the send waits for the receive
        msg = torch.full((big,), rank + 1, dtype=torch.uint8, device=dev)
        x = rand(4096, torch.float32, 14)
        want = reference(x)
        xd = x.cuda()
        u8 = 1
        for sender in (1, 0):  # the group on rank 0, then the group on rank 1
            receiver = 1 - sender
            if rank == receiver:
                nccl.check("ncclGroupStart")
                nccl.check("ncclRecv", ptr(msg), big, u8, sender, comm, nccl.stream())
                nccl.check("ncclAllReduce", ptr(xd), ptr(xd), 4096, NCCL_TYPE[torch.float32], SUM, comm, nccl.stream())
                nccl.check("ncclGroupEnd")
            elif rank == sender:
                nccl.check("ncclSend", ptr(msg), big, u8, receiver, comm, nccl.stream())
                nccl.check("ncclAllReduce", ptr(xd), ptr(xd), 4096, NCCL_TYPE[torch.float32], SUM, comm, nccl.stream())
            else:
                nccl.check("ncclAllReduce", ptr(xd), ptr(xd), 4096, NCCL_TYPE[torch.float32], SUM, comm, nccl.stream())
            wait(f"group on rank {receiver}")
            if rank == receiver:
                got = msg.cpu()
                assert bool((got == sender + 1).all()), "the received bytes"
                msg.fill_(rank + 1)
            xd.copy_(x.cuda())
        # The all-reduce's bits, once more on its own.
        nccl.check("ncclAllReduce", ptr(xd), ptr(xd), 4096, NCCL_TYPE[torch.float32], SUM, comm, nccl.stream())
        wait("all_reduce")
        same(bits(xd), want, "all-reduce")
        return "both ways"

    @check("two streams without a wait, the first held back: the calls run in their order")
    def _():
        s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
        ins = [rand(2048, torch.float32, 20 + i) for i in range(8)]
        wants = [reference(x) for x in ins]
        outs = [torch.empty(2048, dtype=torch.float32, device=dev) for _ in ins]
        dins = [x.cuda() for x in ins]
        torch.cuda.synchronize()
        for i, (a, b) in enumerate(zip(dins, outs)):
            s = s1 if i % 2 == 0 else s2
            with torch.cuda.stream(s):
                if rank == 0 and i % 2 == 0:
                    torch.cuda._sleep(2_000_000)  # ~1 ms: s1's call would come after s2's without NCCL's order
                nccl.check("ncclAllReduce", ptr(a), ptr(b), 2048, NCCL_TYPE[torch.float32], SUM, comm, nccl.stream())
        for s in (s1, s2):
            torch.cuda.current_stream().wait_stream(s)
        wait("two streams")
        for i, (b, w) in enumerate(zip(outs, wants)):
            same(bits(b), w, f"call {i}")
        e = ctypes.c_int(-1)
        nccl.check("ncclCommGetAsyncError", comm, ctypes.byref(e))
        assert e.value == 0, f"async error {e.value}"
        return "8 calls on 2 streams"

    @check("an integer sum and a float max: served, the reference's bits")
    def _():
        a = torch.arange(100, dtype=torch.int32, device=dev) + rank
        nccl.check("ncclAllReduce", ptr(a), ptr(a), 100, NCCL_TYPE[torch.int32], SUM, comm, nccl.stream())
        wait("int sum")
        want = torch.arange(100, dtype=torch.int32) * world + sum(range(world))
        assert torch.equal(a.cpu(), want)
        x = rand(100, torch.float32, 30)
        want = reference(x, "max")
        f = x.cuda()
        nccl.check("ncclAllReduce", ptr(f), ptr(f), 100, NCCL_TYPE[torch.float32], MAX, comm, nccl.stream())
        wait("max")
        same(bits(f), want, "max")
        return "ok"

    torch.cuda.synchronize()
    nccl.check("ncclCommDestroy", comm)
    dist.barrier()
    dist.destroy_process_group()
    info["results"] = results
    with open(f"{out}.{rank}", "w") as f:
        json.dump(info, f, indent=1)
    for r in results:
        print(f"rank {rank}: {'PASS' if r['ok'] else 'FAIL'}: {r['check']}: {r.get('detail', r.get('error'))}", flush=True)
    sys.exit(1 if any(not r["ok"] for r in results) else 0)


if __name__ == "__main__":
    main()
