#!/usr/bin/env python3
"""Generates shoal's typed host API (types x operations) from the tables below.

Outputs (checked in; CI regenerates and fails on a diff):
  include/shoal/detail/host_api.h   C declarations, included by <shoal/shoal.h>
  src/runtime/host_api_gen.cc           definitions: one line each into the generic C API (typed *_on_stream
                                    RMA, put_signal and wait_until included)
  src/coll/coll_api_gen.cc              team collectives, blocking and shoalx_*_on_stream: one line each
                                    into the generic collectives (src/coll/coll.hpp; the coll layer
                                    sits above the runtime)

Every output carries the mark of codegen/generated.py.

Run from anywhere: python3 codegen/gen_host_api.py [--check | --list]
"""
import argparse
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import generated  # noqa: E402  (the mark of a generated file)

ROOT = pathlib.Path(__file__).resolve().parent.parent
GENERATOR = "codegen/gen_host_api.py"

# OpenSHMEM 1.5 standard RMA types, plus NVSHMEM's half and bfloat16: (TYPENAME, C type)
RMA_TYPES = [
    ("float", "float"), ("double", "double"), ("longdouble", "long double"),
    ("char", "char"), ("schar", "signed char"), ("short", "short"), ("int", "int"),
    ("long", "long"), ("longlong", "long long"), ("uchar", "unsigned char"),
    ("ushort", "unsigned short"), ("uint", "unsigned int"), ("ulong", "unsigned long"),
    ("ulonglong", "unsigned long long"), ("int8", "int8_t"), ("int16", "int16_t"),
    ("int32", "int32_t"), ("int64", "int64_t"), ("uint8", "uint8_t"), ("uint16", "uint16_t"),
    ("uint32", "uint32_t"), ("uint64", "uint64_t"), ("size", "size_t"), ("ptrdiff", "ptrdiff_t"),
    # NVSHMEM's 16-bit floats (shoal_half_t / shoal_bfloat16_t, see REDUCE_FLOAT below), moved as bytes
    ("half", "shoal_half_t"), ("bfloat16", "shoal_bfloat16_t"),
]
SIZES = [8, 16, 32, 64, 128]  # sized RMA: putN/getN/iputN/igetN, N in bits

# Standard AMO types (fetch/set/swap/compare_swap/inc/add and their fetch forms).
AMO_STD = [("int", "int"), ("long", "long"), ("longlong", "long long"), ("uint", "unsigned int"),
           ("ulong", "unsigned long"), ("ulonglong", "unsigned long long"), ("int32", "int32_t"),
           ("int64", "int64_t"), ("uint32", "uint32_t"), ("uint64", "uint64_t"), ("size", "size_t"),
           ("ptrdiff", "ptrdiff_t")]
# Extended AMO types: fetch/set/swap (OpenSHMEM), plus add/fetch_add (shoal, as NVSHMEM 3.7).
AMO_FLOAT = [("float", "float"), ("double", "double")]
# NVSHMEM's half AMOs (IEEE binary16, shoal_half_t): fetch/set/swap/add/fetch_add (NVSHMEM 3.8). 2-byte words: the
# device runs them on the containing aligned 4-byte word (add natively), the host in float rounded to nearest even.
AMO_HALF = [("half", "shoal_half_t")]
# Bitwise AMO types.
AMO_BITWISE = [("uint", "unsigned int"), ("ulong", "unsigned long"), ("ulonglong", "unsigned long long"),
               ("int32", "int32_t"), ("int64", "int64_t"), ("uint32", "uint32_t"), ("uint64", "uint64_t")]
# Point-to-point synchronization types (wait_until / test).
SYNC_TYPES = [("short", "short"), ("int", "int"), ("long", "long"), ("longlong", "long long"),
              ("ushort", "unsigned short"), ("uint", "unsigned int"), ("ulong", "unsigned long"),
              ("ulonglong", "unsigned long long"), ("int32", "int32_t"), ("int64", "int64_t"),
              ("uint32", "uint32_t"), ("uint64", "uint64_t"), ("size", "size_t"), ("ptrdiff", "ptrdiff_t")]

# Team collectives (OpenSHMEM 1.5 team-based forms; reducescatter as NVSHMEM).
# Data movement (broadcast/fcollect/collect/alltoall): the standard RMA types.
COLL_TYPES = RMA_TYPES
# Reductions: and/or/xor over the integer types; min/max/sum/prod over those plus float, double and
# NVSHMEM's half (IEEE binary16) and bfloat16 (shoal_half_t / shoal_bfloat16_t, <shoal/types.h>: CUDA's
# __half / __nv_bfloat16 under nvcc, a 2-byte struct otherwise; the host combines them in float and
# rounds each result to nearest even). (long double and complex reductions come later.)
REDUCE_INT = [(tn, ct) for tn, ct in RMA_TYPES if tn not in ("float", "double", "longdouble", "half", "bfloat16")]
REDUCE_FLOAT = [("float", "float"), ("double", "double"), ("half", "shoal_half_t"), ("bfloat16", "shoal_bfloat16_t")]
# The scalar code (src/transport/scalar.hpp) of a reduction type; scalar_of<T>() except for the 2-byte floats.
SCALAR_OF = {"shoal_half_t": "sd::scalar{sd::scalar_kind::floating, 2}",
             "shoal_bfloat16_t": "sd::scalar{sd::scalar_kind::bfloat, 2}"}
BITWISE_OPS = ["and", "or", "xor"]
ARITH_OPS = ["min", "max", "sum", "prod"]

SIZED_CTYPE = {8: "uint8_t", 16: "uint16_t", 32: "uint32_t", 64: "uint64_t", 128: None}


class Emitter:
    def __init__(self):
        self.decls = []
        self.defs = []
        self.fns = []  # (ret, name, params), read by cuda_branch() and codegen/gen_device_api.py
        self.host_only = set()  # names with no device twin: declared under their own name under nvcc

    def section(self, title):
        self.decls.append(f"\n/* {title} */")
        self.defs.append(f"\n// {title}")

    def fn(self, ret, name, params, body):
        self.decls.append(f"SHOAL_API {ret} {name}({params});")
        self.fns.append((ret, name, params))
        self.defs.append(f"{ret} {name}({params}) {{ {body} }}")


def rma(e):
    e.section("RMA: typed put/get/p/g/iput/iget and _nbi (OpenSHMEM standard RMA types)")
    for tn, ct in RMA_TYPES:
        sz = f"sizeof({ct})"
        al = f"alignof({ct})"
        for nbi in ("", "_nbi"):
            e.fn("void", f"shoal_{tn}_put{nbi}", f"{ct}* dest, const {ct}* source, size_t nelems, int pe",
                 f'capi::put{nbi}("shoal_{tn}_put{nbi}", dest, source, nelems, {sz}, {al}, pe);')
            e.fn("void", f"shoal_{tn}_get{nbi}", f"{ct}* dest, const {ct}* source, size_t nelems, int pe",
                 f'capi::get{nbi}("shoal_{tn}_get{nbi}", dest, source, nelems, {sz}, {al}, pe);')
        e.fn("void", f"shoal_{tn}_p", f"{ct}* dest, {ct} value, int pe",
             f'capi::put("shoal_{tn}_p", dest, &value, 1, {sz}, {al}, pe);')
        e.fn(ct, f"shoal_{tn}_g", f"const {ct}* source, int pe",
             f'{ct} value{{}}; capi::get("shoal_{tn}_g", &value, source, 1, {sz}, {al}, pe); return value;')
        e.fn("void", f"shoal_{tn}_iput",
             f"{ct}* dest, const {ct}* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe",
             f'capi::iput("shoal_{tn}_iput", dest, source, dst, sst, nelems, {sz}, pe);')
        e.fn("void", f"shoal_{tn}_iget",
             f"{ct}* dest, const {ct}* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe",
             f'capi::iget("shoal_{tn}_iget", dest, source, dst, sst, nelems, {sz}, pe);')

    e.section("RMA: sized (putN/getN, N in bits) and untyped (putmem/getmem)")
    for bits in SIZES:
        nb = bits // 8
        for nbi in ("", "_nbi"):
            e.fn("void", f"shoal_put{bits}{nbi}", "void* dest, const void* source, size_t nelems, int pe",
                 f'capi::put{nbi}("shoal_put{bits}{nbi}", dest, source, nelems, {nb}, {min(nb, 8)}, pe);')
            e.fn("void", f"shoal_get{bits}{nbi}", "void* dest, const void* source, size_t nelems, int pe",
                 f'capi::get{nbi}("shoal_get{bits}{nbi}", dest, source, nelems, {nb}, {min(nb, 8)}, pe);')
        e.fn("void", f"shoal_iput{bits}",
             "void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe",
             f'capi::iput("shoal_iput{bits}", dest, source, dst, sst, nelems, {nb}, pe);')
        e.fn("void", f"shoal_iget{bits}",
             "void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe",
             f'capi::iget("shoal_iget{bits}", dest, source, dst, sst, nelems, {nb}, pe);')
    for nbi in ("", "_nbi"):
        e.fn("void", f"shoal_putmem{nbi}", "void* dest, const void* source, size_t nbytes, int pe",
             f'capi::put{nbi}("shoal_putmem{nbi}", dest, source, nbytes, 1, 1, pe);')
        e.fn("void", f"shoal_getmem{nbi}", "void* dest, const void* source, size_t nbytes, int pe",
             f'capi::get{nbi}("shoal_getmem{nbi}", dest, source, nbytes, 1, 1, pe);')


def signals(e):
    e.section("put-with-signal: typed, sized and untyped, blocking and _nbi")
    variants = [(f"shoal_{tn}_put_signal", ct, f"sizeof({ct})", f"alignof({ct})") for tn, ct in RMA_TYPES]
    variants += [(f"shoal_put{b}_signal", "void", str(b // 8), str(min(b // 8, 8))) for b in SIZES]
    variants += [("shoal_putmem_signal", "void", "1", "1")]
    for base, ct, sz, al in variants:
        src = "const void" if ct == "void" else f"const {ct}"
        for nbi in ("", "_nbi"):
            name = f"{base}{nbi}"
            n = "nbytes" if base == "shoal_putmem_signal" else "nelems"
            e.fn("void", name,
                 f"{ct}* dest, {src}* source, size_t {n}, uint64_t* sig_addr, uint64_t signal, int sig_op, int pe",
                 f'capi::put_signal("{name}", dest, source, {n}, {sz}, {al}, sig_addr, signal, sig_op, pe);')


def atomics(e):
    e.section("atomics (AMO): standard, extended (float/double/half) and bitwise types")
    amo = {}
    for tn, ct in AMO_STD:
        amo.setdefault((tn, ct), set()).update(
            ["fetch", "set", "swap", "compare_swap", "fetch_inc", "inc", "fetch_add", "add"])
    for tn, ct in AMO_FLOAT + AMO_HALF:
        amo.setdefault((tn, ct), set()).update(["fetch", "set", "swap", "fetch_add", "add"])
    for tn, ct in AMO_BITWISE:
        amo.setdefault((tn, ct), set()).update(["fetch_and", "and", "fetch_or", "or", "fetch_xor", "xor"])
    order = ["fetch", "set", "swap", "compare_swap", "fetch_inc", "inc", "fetch_add", "add",
             "fetch_and", "and", "fetch_or", "or", "fetch_xor", "xor"]
    for (tn, ct), ops in amo.items():
        ty = scalar_of(ct)
        for op in order:
            if op not in ops:
                continue
            name = f"shoal_{tn}_atomic_{op}"
            enum = f"sd::amo_op::{op}_" if op in ("and", "or", "xor") else f"sd::amo_op::{op}"
            call = f'"{name}", {enum}, {ty}'
            if op == "fetch":
                e.fn(ct, name, f"const {ct}* source, int pe",
                     f"{ct} r{{}}; capi::amo({call}, const_cast<{ct}*>(source), nullptr, nullptr, &r, pe); return r;")
            elif op == "set":
                e.fn("void", name, f"{ct}* dest, {ct} value, int pe",
                     f"capi::amo({call}, dest, &value, nullptr, nullptr, pe);")
            elif op == "compare_swap":
                e.fn(ct, name, f"{ct}* dest, {ct} cond, {ct} value, int pe",
                     f"{ct} r{{}}; capi::amo({call}, dest, &value, &cond, &r, pe); return r;")
            elif op in ("fetch_inc",):
                e.fn(ct, name, f"{ct}* dest, int pe",
                     f"{ct} r{{}}; capi::amo({call}, dest, nullptr, nullptr, &r, pe); return r;")
            elif op == "inc":
                e.fn("void", name, f"{ct}* dest, int pe", f"capi::amo({call}, dest, nullptr, nullptr, nullptr, pe);")
            elif op.startswith("fetch_") or op == "swap":
                e.fn(ct, name, f"{ct}* dest, {ct} value, int pe",
                     f"{ct} r{{}}; capi::amo({call}, dest, &value, nullptr, &r, pe); return r;")
            else:  # add, and, or, xor
                e.fn("void", name, f"{ct}* dest, {ct} value, int pe",
                     f"capi::amo({call}, dest, &value, nullptr, nullptr, pe);")


def sync(e):
    e.section("point-to-point synchronization: wait_until / test and their _all/_any/_some(_vector) forms")
    for tn, ct in SYNC_TYPES:
        ty = f"sd::scalar_of<{ct}>()"
        for verb, test in (("wait_until", "false"), ("test", "true")):
            n = f"shoal_{tn}_{verb}"
            if verb == "wait_until":
                e.fn("void", n, f"{ct}* ivar, int cmp, {ct} cmp_value",
                     f'capi::wait("{n}", {ty}, ivar, 1, nullptr, nullptr, cmp, &cmp_value, false, W::all, {test});')
            else:
                e.fn("int", n, f"{ct}* ivar, int cmp, {ct} cmp_value",
                     f'return (int)capi::wait("{n}", {ty}, ivar, 1, nullptr, nullptr, cmp, &cmp_value, false, W::all, {test});')
            for mode in ("all", "any", "some"):
                for vec in (False, True):
                    n = f"shoal_{tn}_{verb}_{mode}" + ("_vector" if vec else "")
                    val = f"{ct}* cmp_values" if vec else f"{ct} cmp_value"
                    valp = "cmp_values" if vec else "&cmp_value"
                    idx = "size_t* indices, " if mode == "some" else ""
                    idxa = "indices" if mode == "some" else "nullptr"
                    params = f"{ct}* ivars, size_t nelems, {idx}const int* status, int cmp, {val}"
                    args = (f'"{n}", {ty}, ivars, nelems, status, {idxa}, cmp, {valp}, '
                            f'{"true" if vec else "false"}, W::{mode}, {test}')
                    if mode == "all" and verb == "wait_until":
                        e.fn("void", n, params, f"capi::wait({args});")
                    elif mode == "all":
                        e.fn("int", n, params, f"return (int)capi::wait({args});")
                    else:
                        e.fn("size_t", n, params, f"return capi::wait({args});")


def scalar_of(ct):
    return SCALAR_OF.get(ct, f"sd::scalar_of<{ct}>()")


def reduce_variants():
    """(TYPENAME, C type, op) of every team reduction, in the order they are generated."""
    for tn, ct in REDUCE_INT + REDUCE_FLOAT:
        ops = (BITWISE_OPS if (tn, ct) in REDUCE_INT else []) + ARITH_OPS
        for op in ops:
            yield tn, ct, op


def movement_variants():
    """(stem, C type, element bytes): the untyped (bytes) form, then the typed ones."""
    return [("mem", "void", "1")] + [(tn, ct, f"sizeof({ct})") for tn, ct in COLL_TYPES]


def movement_name(stem, verb, suffix=""):
    """shoal_broadcastmem, shoal_int_broadcast; with suffix "_on_stream" and prefix shoalx_."""
    px = "shoalx_" if suffix else "shoal_"
    return f"{px}{verb}mem{suffix}" if stem == "mem" else f"{px}{stem}_{verb}{suffix}"


def collectives(e):
    """Host team collectives. They go to their own definitions file (src/coll/coll_api_gen.cc): the caller
    passes an Emitter whose defs become that file. Every one returns 0 or a SHOAL_ERR_* code."""
    def fn(name, params, body, twin=True):
        e.fn("int", name, params, f"return c::{body}")
        if not twin:
            e.host_only.add(name)

    e.section("team collectives: synchronization (every member of the team calls)")
    fn("shoal_team_sync", "shoal_team_t team", 'sync("shoal_team_sync", team, false);')
    fn("shoal_barrier", "shoal_team_t team", 'sync("shoal_barrier", team, true);')

    e.section("team collectives: broadcast, fcollect, collect, alltoall (untyped, in bytes; then typed). "
              "collect has no device twin")
    for stem, ct, sz in movement_variants():
        src = "const void" if ct == "void" else f"const {ct}"
        n = "nbytes" if stem == "mem" else "nelems"
        name = movement_name(stem, "broadcast")
        fn(name, f"shoal_team_t team, {ct}* dest, {src}* source, size_t {n}, int PE_root",
           f'broadcast("{name}", team, dest, source, {n}, {sz}, PE_root);')
        for verb in ("fcollect", "collect", "alltoall"):
            name = movement_name(stem, verb)
            fn(name, f"shoal_team_t team, {ct}* dest, {src}* source, size_t {n}",
               f'{verb}("{name}", team, dest, source, {n}, {sz});', twin=verb != "collect")

    for kind in ("reduce", "reducescatter"):
        e.section(f"team collectives: {kind} (and/or/xor: integer types; min/max/sum/prod: integer types, "
                  "float, double, half, bfloat16)")
        for tn, ct, op in reduce_variants():
            name = f"shoal_{tn}_{op}_{kind}"
            fn(name, f"shoal_team_t team, {ct}* dest, const {ct}* source, size_t nreduce",
               f'{kind}("{name}", team, dest, source, nreduce, {scalar_of(ct)}, c::reduce_op::{op}_);')


def collectives_on_stream(e):
    """Team collectives enqueued on a CUDA stream (NVSHMEM's nvshmemx_*_on_stream), host only; into
    src/coll/coll_api_gen.cc with the blocking ones. Every one returns 0 or a SHOAL_ERR_* code."""
    st = "struct CUstream_st* stream"

    def fn(name, params, body):
        e.fn("int", name, f"{params}, {st}", f"return c::{body}")
        e.host_only.add(name)

    e.section("team collectives on a CUDA stream: synchronization")
    fn("shoalx_team_sync_on_stream", "shoal_team_t team",
       'sync_on_stream("shoalx_team_sync_on_stream", team, false, stream);')
    fn("shoalx_barrier_on_stream", "shoal_team_t team",
       'sync_on_stream("shoalx_barrier_on_stream", team, true, stream);')

    e.section("team collectives on a CUDA stream: broadcast, fcollect, alltoall (untyped, in bytes; then typed)")
    for stem, ct, sz in movement_variants():
        src = "const void" if ct == "void" else f"const {ct}"
        n = "nbytes" if stem == "mem" else "nelems"
        name = movement_name(stem, "broadcast", "_on_stream")
        fn(name, f"shoal_team_t team, {ct}* dest, {src}* source, size_t {n}, int PE_root",
           f'broadcast_on_stream("{name}", team, dest, source, {n}, {sz}, PE_root, stream);')
        for verb in ("fcollect", "alltoall"):
            name = movement_name(stem, verb, "_on_stream")
            fn(name, f"shoal_team_t team, {ct}* dest, {src}* source, size_t {n}",
               f'{verb}_on_stream("{name}", team, dest, source, {n}, {sz}, stream);')

    for kind in ("reduce", "reducescatter"):
        e.section(f"team collectives on a CUDA stream: {kind} (types and ops as the blocking {kind})")
        for tn, ct, op in reduce_variants():
            name = f"shoalx_{tn}_{op}_{kind}_on_stream"
            fn(name, f"shoal_team_t team, {ct}* dest, const {ct}* source, size_t nreduce",
               f'{kind}_on_stream("{name}", team, dest, source, nreduce, {scalar_of(ct)}, c::reduce_op::{op}_, '
               'stream);')


# On-stream RMA types: the standard RMA types without long double, plus half and bfloat16 (as NVSHMEM's).
STREAM_TYPES = [(tn, ct) for tn, ct in RMA_TYPES if tn != "longdouble"]


def stream_rma(e):
    """Typed RMA, put-with-signal and wait_until enqueued on a CUDA stream (NVSHMEM's nvshmemx_*_on_stream), host
    only; into src/runtime/host_api_gen.cc, each one line into the generic on-stream calls (src/runtime/stream_api.cc).
    _nbi forms are the blocking ones (both only enqueue)."""
    st = "struct CUstream_st* stream"

    def fn(ret, name, params, body):
        e.fn(ret, name, f"{params}, {st}", body)
        e.host_only.add(name)

    e.section("RMA on a CUDA stream: typed put/get/p/g/iput/iget and _nbi")
    for tn, ct in STREAM_TYPES:
        sz = f"sizeof({ct})"
        for nbi in ("", "_nbi"):
            for op in ("put", "get"):
                n = f"shoalx_{tn}_{op}{nbi}_on_stream"
                fn("void", n, f"{ct}* dest, const {ct}* source, size_t nelems, int pe",
                   f'capi::{op}_on_stream("{n}", dest, source, nelems * {sz}, pe, stream);')
        n = f"shoalx_{tn}_p_on_stream"
        fn("void", n, f"{ct}* dest, const {ct} value, int pe",
           f'capi::p_on_stream("{n}", dest, &value, {sz}, pe, stream);')
        n = f"shoalx_{tn}_g_on_stream"
        fn(ct, n, f"const {ct}* source, int pe",
           f'{ct} value{{}}; capi::g_on_stream("{n}", &value, source, {sz}, pe, stream); return value;')
        for op in ("iput", "iget"):
            n = f"shoalx_{tn}_{op}_on_stream"
            fn("void", n, f"{ct}* dest, const {ct}* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe",
               f'capi::{op}_on_stream("{n}", dest, source, dst, sst, nelems, {sz}, pe, stream);')

    e.section("RMA on a CUDA stream: sized (putN/getN, N in bits) and untyped _nbi")
    for bits in SIZES:
        nb = bits // 8
        for nbi in ("", "_nbi"):
            for op in ("put", "get"):
                n = f"shoalx_{op}{bits}{nbi}_on_stream"
                fn("void", n, "void* dest, const void* source, size_t nelems, int pe",
                   f'capi::{op}_on_stream("{n}", dest, source, nelems * {nb}, pe, stream);')
        for op in ("iput", "iget"):
            n = f"shoalx_{op}{bits}_on_stream"
            fn("void", n, "void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe",
               f'capi::{op}_on_stream("{n}", dest, source, dst, sst, nelems, {nb}, pe, stream);')
    for op in ("put", "get"):
        n = f"shoalx_{op}mem_nbi_on_stream"
        fn("void", n, "void* dest, const void* source, size_t nbytes, int pe",
           f'capi::{op}_on_stream("{n}", dest, source, nbytes, pe, stream);')

    e.section("put-with-signal on a CUDA stream: typed, sized and untyped, blocking and _nbi")
    variants = [(f"shoalx_{tn}_put_signal", ct, f"sizeof({ct})") for tn, ct in STREAM_TYPES]
    variants += [(f"shoalx_put{b}_signal", "void", str(b // 8)) for b in SIZES]
    variants += [("shoalx_putmem_signal", "void", "1")]
    for base, ct, sz in variants:
        src = "const void" if ct == "void" else f"const {ct}"
        count = "nbytes" if base == "shoalx_putmem_signal" else "nelems"
        for nbi in ("", "_nbi"):
            n = f"{base}{nbi}_on_stream"
            fn("void", n,
               f"{ct}* dest, {src}* source, size_t {count}, uint64_t* sig_addr, uint64_t signal, int sig_op, int pe",
               f'capi::put_signal_on_stream("{n}", dest, source, {count} * {sz}, sig_addr, signal, sig_op, pe, stream);')

    e.section("wait_until on a CUDA stream: one word, all of nelems words (status and cmp_values are read on the "
              "host when called; host or device memory)")
    for tn, ct in SYNC_TYPES:
        ty = f"sd::scalar_of<{ct}>()"
        n = f"shoalx_{tn}_wait_until_on_stream"
        fn("void", n, f"{ct}* ivar, int cmp, {ct} cmp_value",
           f'capi::wait_until_on_stream("{n}", {ty}, ivar, 1, nullptr, cmp, &cmp_value, false, stream);')
        n = f"shoalx_{tn}_wait_until_all_on_stream"
        fn("void", n, f"{ct}* ivars, size_t nelems, const int* status, int cmp, {ct} cmp_value",
           f'capi::wait_until_on_stream("{n}", {ty}, ivars, nelems, status, cmp, &cmp_value, false, stream);')
        n = f"shoalx_{tn}_wait_until_all_vector_on_stream"
        fn("void", n, f"{ct}* ivars, size_t nelems, const int* status, int cmp, {ct}* cmp_values",
           f'capi::wait_until_on_stream("{n}", {ty}, ivars, nelems, status, cmp, cmp_values, true, stream);')


# --- nvcc (__CUDACC__) branch of host_api.h: owned by the device API (see docs/device-api.md) ----
# Under nvcc, <shoal/shoal.h> also brings the device facade, whose thread-scope functions carry the
# same names as these host entry points. nvcc cannot overload on __host__/__device__, so there each
# host entry point that has a device twin is declared under another C++ name bound to the same
# symbol (asm label), and include/shoal/device/facade.cuh (codegen/gen_device_api.py) defines
# the __host__ __device__ function of the OpenSHMEM name that calls one or the other.

CUDA_SELECT = """
/* nvcc with the device facade: see the #else branch at the end of this list. libshoal's own sources
 * (SHOAL_DETAIL_LIBSHOAL_BUILD, a private define of its targets) never have the facade. */
#if defined(__CUDACC__) && defined(__cplusplus) && !defined(__CUDACC_RTC__) && !defined(SHOAL_NO_DEVICE_FACADE) && \\
    !defined(SHOAL_DETAIL_LIBSHOAL_BUILD)
#define SHOAL_DETAIL_DEVICE_FACADE 1
#else
#define SHOAL_DETAIL_DEVICE_FACADE 0
#endif

#if !SHOAL_DETAIL_DEVICE_FACADE
"""


def has_device_twin(name):
    """True if the device facade defines a function of this name (long double has no device form)."""
    return "longdouble" not in name


def host_alias(name):
    """The C++ name under which nvcc sees host entry point `name` (same symbol, via an asm label)."""
    assert name.startswith("shoal_")
    return "shoal_detail_host_" + name[len("shoal_"):]


def cuda_branch(e):
    lines = ["\n#else /* SHOAL_DETAIL_DEVICE_FACADE: host entry points that have a device twin, renamed */"]
    for ret, name, params in e.fns:
        if has_device_twin(name) and name not in e.host_only:
            lines.append(f'SHOAL_API {ret} {host_alias(name)}({params}) __asm__("{name}");')
        else:
            lines.append(f"SHOAL_API {ret} {name}({params});")
    lines.append("#endif /* SHOAL_DETAIL_DEVICE_FACADE */")
    return CUDA_SELECT, "\n".join(lines) + "\n"


HEADER = "/* clang-format off */\n/* " + generated.marker(GENERATOR) + """
 * shoal's typed host API (OpenSHMEM 1.5 names with the shoal_ prefix). Included by <shoal/shoal.h>.
 * Contracts are those of the generic calls documented in <shoal/shoal.h>:
 *   put/get/p/g/iput/iget: dest (put) or source (get) symmetric; nelems in elements (nbytes: bytes, *mem forms);
 *     pe in [0, n_pes)
 *   put_signal: data first, then sig_op (SHOAL_SIGNAL_SET/ADD) with signal on sig_addr at pe
 *   atomics: dest/source symmetric and naturally aligned; sequentially consistent on the host. half (shoal_half_t):
 *     fetch/set/swap/add/fetch_add, the add rounded to nearest even
 *   wait_until/test: ivars local and symmetric; cmp a SHOAL_CMP_* value; status entries != 0 are skipped
 *   team collectives (host; see <shoal/team.h>): every member of `team` calls with the same arguments (collect:
 *     its own nelems/nbytes); dest/source symmetric; return 0 or a SHOAL_ERR_* code, the same on every member.
 *     Under nvcc each has a __host__ __device__ twin of the same name in the device facade (<shoal/device/facade.cuh>),
 *     except collect (host only) and the long double forms
 *   half/bfloat16 reductions: shoal_half_t / shoal_bfloat16_t (<shoal/types.h>); the host combines in float and
 *     rounds each partial result to nearest even
 *   shoalx_*_on_stream team collectives: enqueued on `stream` (a cudaStream_t; GPU heaps), arguments checked when
 *     called; return 0 or a SHOAL_ERR_* code (SHOAL_ERR_UNSUPPORTED on host-memory heaps; SHOAL_ERR_INVALID_ARGUMENT,
 *     before any stream work, for a team with a member this GPU cannot load/store, e.g. a proxy peer, which the
 *     blocking team collectives reach). Host only
 */
#ifndef SHOAL_DETAIL_HOST_API_H_
#define SHOAL_DETAIL_HOST_API_H_

#include <stddef.h>
#include <stdint.h>

#include "shoal/team.h"
#include "shoal/types.h"

/* A cudaStream_t is a struct CUstream_st* (also declared by <shoal/shoal.h>). */
struct CUstream_st;

SHOAL_EXTERN_C_BEGIN
"""

FOOTER = """
SHOAL_EXTERN_C_END

#endif /* SHOAL_DETAIL_HOST_API_H_ */
"""

SOURCE_HEAD = "// clang-format off\n// " + generated.marker(GENERATOR) + """
// Each typed C entry point forwards to one generic, type-erased implementation in c_api.hpp.
#include "runtime/c_api.hpp"
#include "shoal/shoal.h"

namespace capi = shoal::detail::c_api;
namespace sd = shoal::detail;
using W = shoal::detail::world_impl::wait_mode;

extern "C" {
"""


COLL_SOURCE_HEAD = "// clang-format off\n// " + generated.marker(GENERATOR) + """
// Each typed team collective forwards to one generic, type-erased implementation in coll.hpp.
#include "coll/coll.hpp"
#include "shoal/shoal.h"

namespace c = shoal::detail::coll;
namespace sd = shoal::detail;

extern "C" {
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true", help="fail if the checked-in outputs differ")
    ap.add_argument("--list", action="store_true", help="print the outputs (repository paths), one per line")
    args = ap.parse_args()
    e = Emitter()
    rma(e)
    signals(e)
    atomics(e)
    sync(e)
    stream_rma(e)
    runtime_defs = list(e.defs)
    e.defs = []
    collectives(e)
    collectives_on_stream(e)
    outputs = {
        ROOT / "include/shoal/detail/host_api.h": HEADER + cuda_branch(e)[0] + "\n".join(e.decls) + "\n"
        + cuda_branch(e)[1] + FOOTER,
        ROOT / "src/runtime/host_api_gen.cc": SOURCE_HEAD + "\n".join(runtime_defs) + "\n\n}  // extern \"C\"\n",
        ROOT / "src/coll/coll_api_gen.cc": COLL_SOURCE_HEAD + "\n".join(e.defs) + "\n\n}  // extern \"C\"\n",
    }
    if args.list:
        print(*(p.relative_to(ROOT).as_posix() for p in outputs), sep="\n")
        return 0
    unmarked = generated.unmarked(GENERATOR, outputs, ROOT)
    if unmarked:
        print(f"outputs without the mark of codegen/generated.py ({generated.marker(GENERATOR)}):", *unmarked,
              sep="\n  ")
        return 1
    stale = []
    for path, text in outputs.items():
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(str(path.relative_to(ROOT)))
        else:
            path.write_text(text)
    if stale:
        print("generated files are stale; run python3 codegen/gen_host_api.py:", *stale, sep="\n  ")
        return 1
    n = len([d for d in e.decls if d.startswith("SHOAL_API")])
    print(f"{'checked' if args.check else 'wrote'} {n} typed entry points")
    return 0


if __name__ == "__main__":
    sys.exit(main())
