#!/usr/bin/env python3
"""Generates the OpenSHMEM 1.5 spelling of shoal's host API (include/compat/shmem/shoal_shmem/).

Every public `SHOAL_API <ret> shoal_<name>(<params>);` of shoal's host headers (shoal.h, team.h,
detail/host_api.h; not the shoalx_ extensions, the on-stream calls nor shoal's error calls) becomes
`shmem_<name>`, declared with an asm label that binds it to the shoal_ symbol, so no wrapper code
runs (except shmem_init, _init_thread and _finalize: libshoal_shmem's own, which set up the
legacy collectives' workspace around shoal's). Then, from the same table: the context forms
(shmem_ctx_<name>, the default ordering), the C11 _Generic interfaces (with their context forms,
selected on a first argument of type shmem_ctx_t) and the C++ overloads of the typed families. Last,
the legacy active-set collectives of OpenSHMEM 1.5 (shmem_barrier, shmem_broadcast32/64 & co.,
shmem_<TYPE>_<OP>_to_all): declarations here, definitions in src/shmem/legacy_gen.inc (forwarding to
src/shmem/shmem_legacy.cc). The OpenSHMEM 1.5 routines shoal has no call for (the non-blocking fetching
AMOs, the long double and complex team reductions) are declared with the rest, with their context forms
and generic selections, and defined in src/shmem/typed_gen.inc (forwarding to src/shmem/shmem_typed.cc).
Output split in files of at most 700 lines once clang-formatted; every output carries the mark of
codegen/generated.py. Run: python3 codegen/gen_shmem_api.py; --check (ctest codegen_shmem_up_to_date) fails when
stale; --list prints the outputs.
"""
import filecmp
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import generated  # noqa: E402  (the mark of a generated file)

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCES = ["include/shoal/shoal.h", "include/shoal/team.h", "include/shoal/detail/host_api.h"]
OUT = ROOT / "include/compat/shmem/shoal_shmem"
GENERATOR = "codegen/gen_shmem_api.py"
MARK = generated.marker(GENERATOR)
LEGACY_OUT = ROOT / "src/shmem/legacy_gen.inc"
TYPED_OUT = ROOT / "src/shmem/typed_gen.inc"
# Declared here without an asm label: libshoal_shmem defines them (src/shmem/shmem_legacy.cc).
OWN = {"init", "init_thread", "finalize"}
# shoal_barrier(team) is not OpenSHMEM's: shmem_barrier is the legacy active-set barrier (below).
SKIP = {"set_error_mode", "last_error", "clear_error", "get_uniqueid", "init_attr", "barrier"}
# The standard C types of the typed families, OpenSHMEM's TYPENAME first. Only these get generic
# selections (the stdint typedefs alias them, and _Generic rejects compatible duplicates).
GENERIC_TYPES = [("float", "float"), ("double", "double"), ("longdouble", "long double"), ("char", "char"),
                 ("schar", "signed char"), ("short", "short"), ("int", "int"), ("long", "long"),
                 ("longlong", "long long"), ("uchar", "unsigned char"), ("ushort", "unsigned short"),
                 ("uint", "unsigned int"), ("ulong", "unsigned long"), ("ulonglong", "unsigned long long"),
                 ("complexf", "float _Complex"), ("complexd", "double _Complex")]
# A family that has a stdint type but not the standard type it is (the extended AMOs: int32_t, int64_t,
# uint32_t, uint64_t beside the unsigned standard types) selects that type's form for the standard type (LP64).
ALIASES = {"int": "int32", "long": "int64", "uint": "uint32", "ulong": "uint64"}
TYPENAMES = sorted([t for t, _ in GENERIC_TYPES] + ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                                                    "uint64", "size", "ptrdiff"], key=len, reverse=True)
# The complex types in C++ (GNU C++'s _Complex, SHOAL_SHMEM_GNU_COMPLEX) also take std::complex (same layout).
STD_COMPLEX = {"shoal_shmem_complexf": "std::complex<float>", "shoal_shmem_complexd": "std::complex<double>"}
# The non-blocking fetching AMOs (OpenSHMEM 1.5), shmem_<TYPE>_<family>_nbi(fetch, ...), for every type of
# shoal's blocking <family>: they complete at once (fetch is written before the call returns).
FETCH_NBI = ["atomic_fetch", "atomic_swap", "atomic_compare_swap", "atomic_fetch_inc", "atomic_fetch_add",
             "atomic_fetch_and", "atomic_fetch_or", "atomic_fetch_xor"]
# The AMO names OpenSHMEM 1.4 deprecated, still in 1.5 (shmem_<TYPE>_fadd & co., C11 shmem_fadd & co.): the
# current routine under its old name (an asm label on the same shoal symbol).
DEPRECATED_AMO = {"fetch": "atomic_fetch", "set": "atomic_set", "cswap": "atomic_compare_swap", "swap": "atomic_swap",
                  "finc": "atomic_fetch_inc", "inc": "atomic_inc", "fadd": "atomic_fetch_add", "add": "atomic_add"}
# The team reductions of the types shoal's reductions do not take (the spec's table: min/max of long double,
# sum/prod of long double and the complex types).
EXTRA_REDUCE = [("longdouble", "long double", ["max", "min", "sum", "prod"]),
                ("complexf", "shoal_shmem_complexf", ["sum", "prod"]),
                ("complexd", "shoal_shmem_complexd", ["sum", "prod"])]
# Families with a context form (RMA, signals, AMOs), and the generic families with the argument
# whose pointed-to type selects (0-based; wait/test select on the ivars).
CTX_FAMILY = re.compile(r"^(T_)?(put|get|p|g|iput|iget|put_nbi|get_nbi|put_signal|put_signal_nbi|atomic_\w+)$|"
                        r"^(putmem|getmem|put|get|iput|iget)(8|16|32|64|128|mem)?(_nbi|_signal|_signal_nbi)?$")
GENERIC = {"put": 0, "get": 0, "p": 0, "g": 0, "iput": 0, "iget": 0, "put_nbi": 0, "get_nbi": 0, "put_signal": 0,
           "put_signal_nbi": 0, "atomic_fetch": 0, "atomic_set": 0, "atomic_swap": 0, "atomic_compare_swap": 0,
           "atomic_fetch_inc": 0, "atomic_inc": 0, "atomic_fetch_add": 0, "atomic_add": 0, "atomic_fetch_and": 0,
           "atomic_and": 0, "atomic_fetch_or": 0, "atomic_or": 0, "atomic_fetch_xor": 0, "atomic_xor": 0,
           "wait_until": 0, "wait_until_all": 0, "wait_until_any": 0, "wait_until_some": 0,
           "wait_until_all_vector": 0, "wait_until_any_vector": 0, "wait_until_some_vector": 0, "test": 0,
           "test_all": 0, "test_any": 0, "test_some": 0, "test_all_vector": 0, "test_any_vector": 0,
           "test_some_vector": 0, "broadcast": 1, "collect": 1, "fcollect": 1, "alltoall": 1}
for op in ["and", "or", "xor", "max", "min", "sum", "prod"]:
    GENERIC[op + "_reduce"] = 1
for family in FETCH_NBI:
    GENERIC[family + "_nbi"] = 0
for family in DEPRECATED_AMO:
    GENERIC[family] = 0
# The legacy active-set collectives (OpenSHMEM 1.5 section 9.9.x, deprecated): the sized data movers,
# and the reductions with their types (the spec's table: and/or/xor integers, min/max adding the real
# floating types, sum/prod adding the complex ones).
ACTIVE_SET = "int PE_start, int logPE_stride, int PE_size"
LEGACY_SIZED = {
    "broadcast": f"void* dest, const void* source, size_t nelems, int PE_root, {ACTIVE_SET}, long* pSync",
    "collect": f"void* dest, const void* source, size_t nelems, {ACTIVE_SET}, long* pSync",
    "fcollect": f"void* dest, const void* source, size_t nelems, {ACTIVE_SET}, long* pSync",
    "alltoall": f"void* dest, const void* source, size_t nelems, {ACTIVE_SET}, long* pSync",
    "alltoalls": f"void* dest, const void* source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, {ACTIVE_SET}, "
                 "long* pSync",
}
TO_ALL_INT = [("short", "short"), ("int", "int"), ("long", "long"), ("longlong", "long long")]
TO_ALL_REAL = [("float", "float"), ("double", "double"), ("longdouble", "long double")]
TO_ALL_COMPLEX = [("complexf", "shoal_shmem_complexf"), ("complexd", "shoal_shmem_complexd")]
TO_ALL = [("and", TO_ALL_INT), ("or", TO_ALL_INT), ("xor", TO_ALL_INT), ("max", TO_ALL_INT + TO_ALL_REAL),
          ("min", TO_ALL_INT + TO_ALL_REAL), ("sum", TO_ALL_INT + TO_ALL_REAL + TO_ALL_COMPLEX),
          ("prod", TO_ALL_INT + TO_ALL_REAL + TO_ALL_COMPLEX)]
DECL = re.compile(r"SHOAL_API\s+([^;()]*?)\s*\b(shoal_\w+)\s*\(([^)]*)\)\s*;")


def read_decls():
    seen, out = set(), []
    for src in SOURCES:
        text = re.sub(r"/\*.*?\*/", "", (ROOT / src).read_text(), flags=re.S)
        for ret, name, params in DECL.findall(" ".join(text.split())):
            short = name[len("shoal_"):]
            if short in SKIP or "on_stream" in short or name.startswith("shoal_detail") or name in seen:
                continue
            seen.add(name)
            out.append((ret.strip(), short, params.strip()))
    return out


def shmem_types(text):
    return text.replace("shoal_team_config_t", "shmem_team_config_t").replace("shoal_team_t", "shmem_team_t")


def split_type(short):
    """(TYPENAME, family) for a typed name such as long_atomic_add, else (None, short)."""
    for t in TYPENAMES:
        if short.startswith(t + "_"):
            return t, short[len(t) + 1:]
    return None, short


def arg_names(params):
    if params in ("", "void"):
        return []
    return [re.split(r"[\s*]", p.strip())[-1] for p in params.split(",")]


def write_chunks(out, stem, guard, lines, head="", tail=""):
    chunks = [lines[i:i + 120] for i in range(0, len(lines), 120)] or [[]]
    names = []
    for i, chunk in enumerate(chunks):
        name = f"{stem}_{i}.h"
        g = f"SHOAL_SHMEM_{guard}_{i}_H_"
        body = "\n".join(chunk)
        (out / name).write_text(f"/* {MARK} */\n#ifndef {g}\n#define {g}\n"
                                f"{head}\n{body}\n{tail}\n#endif /* {g} */\n")
        names.append(name)
    return names


def std_complex_overload(ret, name, params):
    """For a function taking the complex types: a C++ overload taking std::complex (or None)."""
    if not any(t in params for t in STD_COMPLEX):
        return None
    sparams, args = params, []
    for t, std in STD_COMPLEX.items():
        sparams = sparams.replace(t, std)
    for p, sp in zip(params.split(","), sparams.split(",")):
        name_ = arg_names(p)[0]
        if sp != p:
            args.append(f"reinterpret_cast<{p.strip()[:-len(name_)].strip()}>({name_})")
        else:
            args.append(name_)
    ret_kw = "" if ret == "void" else "return "
    return f"inline {ret} {name}({sparams}) {{ {ret_kw}{name}({', '.join(args)}); }}"


def legacy():
    """Declarations (header lines) and definitions (src/shmem lines) of the legacy collectives, and the
    std::complex overloads of the complex ones (C++ lines)."""
    decls, defs, cxx = [], [], []

    def add(name, params, body):
        decls.append(f"SHOAL_API void shmem_{name}({params});")
        defs.append(f"void shmem_{name}({params}) {{ {body}; }}")
        overload = std_complex_overload("void", f"shmem_{name}", params)
        if overload:
            cxx.append(overload)

    add("barrier", f"{ACTIVE_SET}, long* pSync",
        'legacy::barrier("shmem_barrier", {PE_start, logPE_stride, PE_size}, pSync)')
    # The active-set shmem_sync (C's symbol; <shmem.h> selects the team form, shmem_team_sync, by the
    # number of arguments): the members' earlier puts and AMOs complete too (shmem_barrier's sync).
    add("sync", f"{ACTIVE_SET}, long* pSync", 'legacy::barrier("shmem_sync", {PE_start, logPE_stride, PE_size}, pSync)')
    for bits in (32, 64):
        for family, params in LEGACY_SIZED.items():
            args = ", ".join(a for a in arg_names(params) if a not in ("PE_start", "logPE_stride", "PE_size"))
            add(f"{family}{bits}", params, f'legacy::{family}("shmem_{family}{bits}", {bits // 8}, '
                f'{{PE_start, logPE_stride, PE_size}}, {args})')
    for op, types in TO_ALL:
        for t, c in types:
            params = (f"{c}* dest, const {c}* source, int nreduce, {ACTIVE_SET}, {c}* pWrk, long* pSync")
            add(f"{t}_{op}_to_all", params, f'legacy::to_all<legacy::op_{op}>("shmem_{t}_{op}_to_all", '
                f'{{PE_start, logPE_stride, PE_size}}, dest, source, nreduce, pWrk, pSync)')
    return decls, defs, cxx


def typed(decls):
    """The routines libshoal_shmem defines (src/shmem/typed_gen.inc): (ret, short, params) to declare, and
    their definitions."""
    out, defs = [], []
    for ret, short, params in decls:
        typename, family = split_type(short)
        if typename is None or family not in FETCH_NBI:
            continue
        name, nparams = f"{short}_nbi", f"{ret}* fetch, {params}"
        out.append((shmem_types("void"), name, shmem_types(nparams)))
        defs.append(f"void shmem_{name}({shmem_types(nparams)}) {{ if (typed::fetch_ok(\"shmem_{name}\", fetch)) "
                    f"*fetch = shoal_{short}({', '.join(arg_names(params))}); }}")
    # shmem_<TYPE>_wait (deprecated in 1.4, in 1.5): waits until *ivar != cmp_value.
    for ret, short, params in decls:
        typename, family = split_type(short)
        if typename is None or family != "wait_until":
            continue
        c = params.split("*")[0].strip()
        params = f"{c}* ivar, {c} cmp_value"
        out.append(("void", f"{typename}_wait", params))
        defs.append(f"void shmem_{typename}_wait({params}) {{ shoal_{short}(ivar, SHOAL_CMP_NE, cmp_value); }}")
        if typename == "long":  # and the untyped shmem_wait, on a long
            out.append(("void", "wait", params))
            defs.append(f"void shmem_wait({params}) {{ shoal_{short}(ivar, SHOAL_CMP_NE, cmp_value); }}")
    for t, c, ops in EXTRA_REDUCE:
        for op in ops:
            name = f"{t}_{op}_reduce"
            params = f"shmem_team_t team, {c}* dest, const {c}* source, size_t nreduce"
            out.append(("int", name, params))
            defs.append(f'int shmem_{name}({params}) {{ return typed::team_reduce<typed::op_{op}>("shmem_{name}", '
                        f"team, dest, source, nreduce); }}")
    return out, defs


def typed_key(t, by_type):
    """The TYPENAME whose form a generic selection takes for standard type t: t's own, or its stdint alias's."""
    if t in by_type:
        return t
    alias = ALIASES.get(t)
    return alias if alias in by_type else None


def c11_generic(family, by_type, ctx_names):
    """The _Generic selection of one family; with a context form, on shmem_ctx_t first as the spec's."""
    const = family in ("g", "atomic_fetch", "fetch")  # source is const

    def cases(prefix):
        out = []
        for t, c in GENERIC_TYPES:
            key = typed_key(t, by_type)
            if key is not None and (prefix == "shmem_" or "ctx_" + by_type[key][2] in ctx_names):
                f = prefix + by_type[key][2]
                out.append(f"const {c}*: {f}, {c}*: {f}" if const else f"{c}*: {f}")
        return ", ".join(out)

    plain = cases("shmem_")
    if not plain:
        return None
    sel = GENERIC[family]
    with_ctx = cases("shmem_ctx_") if sel == 0 else ""
    if with_ctx:
        return (f"#define shmem_{family}(...) _Generic(SHOAL_SHMEM_ARG0(__VA_ARGS__, 0), shmem_ctx_t: "
                f"_Generic(SHOAL_SHMEM_ARG1(__VA_ARGS__, 0), {with_ctx}, default: shoal_shmem_no_such_form), "
                f"{plain})(__VA_ARGS__)")
    first = ", ".join(["ARG_" + str(i) for i in range(sel)] + ["dest"])
    return f"#define shmem_{family}({first}, ...) _Generic((dest), {plain})({first}, __VA_ARGS__)"


def main():
    decls = read_decls()
    typed_decls, typed_defs = typed(decls)
    own = OWN | {short for _, short, _ in typed_decls}
    # The deprecated AMO names: the same shoal symbol as the current name.
    labels, deprecated = {}, []
    for ret, short, params in decls:
        typename, family = split_type(short)
        for old, new in DEPRECATED_AMO.items():
            if typename is not None and family == new:
                deprecated.append((ret, f"{typename}_{old}", params))
                labels[f"{typename}_{old}"] = f"shoal_{short}"
    api, ctx, c11, cxx, cxx_complex = [], [], [], [], []
    generic, ctx_names = {}, set()
    for ret, short, params in decls + typed_decls + deprecated:
        sparams, sret = shmem_types(params), shmem_types(ret)
        label = "" if short in own else f' __asm__("{labels.get(short, "shoal_" + short)}")'
        api.append(f"SHOAL_API {sret} shmem_{short}({sparams}){label};")
        overload = std_complex_overload(sret, f"shmem_{short}", sparams)
        if overload:
            cxx_complex.append(overload)
        typename, family = split_type(short)
        if CTX_FAMILY.match(("T_" + family) if typename else short):
            args = ", ".join(arg_names(params))
            ret_kw = "" if sret == "void" else "return "
            ctx.append(f"static inline {sret} shmem_ctx_{short}(shmem_ctx_t ctx, {sparams}) "
                       f"{{ (void)ctx; {ret_kw}shmem_{short}({args}); }}")
            ctx_names.add("ctx_" + short)
        if typename and family in GENERIC:
            generic.setdefault(family, {})[typename] = (sret, sparams, short)
    for family, by_type in sorted(generic.items()):
        line = c11_generic(family, by_type, ctx_names)
        if line is None:
            continue
        c11.append(line)
        for t, c in GENERIC_TYPES:
            key = typed_key(t, by_type)
            if key is None:
                continue
            sret, sparams, short = by_type[key]
            args = ", ".join(arg_names(sparams))
            ret_kw = "" if sret == "void" else "return "
            cxx.append(f"inline {sret} shmem_{family}({sparams}) {{ {ret_kw}shmem_{short}({args}); }}")
            overload = std_complex_overload(sret, f"shmem_{family}", sparams)
            if overload:
                cxx_complex.append(overload.replace(f"{{ {ret_kw}shmem_{family}(", f"{{ {ret_kw}shmem_{short}("))
            if GENERIC[family] == 0 and "ctx_" + short in ctx_names:
                cxx.append(f"inline {sret} shmem_{family}(shmem_ctx_t ctx, {sparams}) "
                           f"{{ {ret_kw}shmem_ctx_{short}(ctx, {args}); }}")
    legacy_decls, legacy_defs, legacy_cxx = legacy()
    cxx_complex += legacy_cxx
    out = pathlib.Path(tempfile.mkdtemp(prefix="gen_shmem_"))
    files = write_chunks(out, "api", "API", api)
    files += write_chunks(out, "ctx", "CTX", ctx)
    files += write_chunks(out, "legacy", "LEGACY", legacy_decls)
    c11_head = ("\n/* The spec's selection of a context form: the first argument, then the second. */\n"
                "#define SHOAL_SHMEM_ARG0(a, ...) a\n#define SHOAL_SHMEM_ARG1(a, b, ...) b\n"
                "/* Never defined: the unselected branch of a context-form selection names it. */\n"
                "SHOAL_API void shoal_shmem_no_such_form(void);")
    c11_files = write_chunks(out, "generic_c11", "C11", c11, c11_head)
    cxx_files = write_chunks(out, "generic_cxx", "CXX", cxx)
    cxx_files += write_chunks(out, "complex_cxx", "COMPLEX_CXX", cxx_complex,
                              "\n/* The std::complex forms of the complex routines (GNU C++ declares them with _Complex). */\n"
                              "#if defined(SHOAL_SHMEM_GNU_COMPLEX)", "#endif\n")
    incl = lambda fs: "\n".join(f'#include "shoal_shmem/{f}"' for f in fs)
    (out / "all.h").write_text(
        f"/* {MARK}\n * Included by <shmem.h>. */\n"
        "#ifndef SHOAL_SHMEM_ALL_H_\n#define SHOAL_SHMEM_ALL_H_\nSHOAL_EXTERN_C_BEGIN\n" + incl(files) +
        "\nSHOAL_EXTERN_C_END\n#if defined(__cplusplus)\n" + incl(cxx_files) +
        "\n#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L\n" + incl(c11_files) +
        "\n#endif\n#endif /* SHOAL_SHMEM_ALL_H_ */\n")
    (out / "legacy_gen.inc").write_text(
        f"// {MARK}\n// The legacy active-set collectives' entry points, included by shmem_legacy.cc inside extern \"C\".\n" +
        "\n".join(legacy_defs) + "\n")
    (out / "typed_gen.inc").write_text(
        f"// {MARK}\n// The entry points of the OpenSHMEM routines shoal has no call for (non-blocking fetching AMOs,\n"
        "// long double and complex team reductions), included by shmem_typed.cc inside extern \"C\".\n" +
        "\n".join(typed_defs) + "\n")
    print(f"gen_shmem_api: {len(api)} functions, {len(ctx)} context forms, {len(c11)} generic families, "
          f"{len(cxx)} C++ overloads ({len(cxx_complex)} for std::complex), {len(legacy_defs)} legacy collectives, "
          f"{len(typed_defs)} of libshoal_shmem's own typed routines", file=sys.stderr)
    headers = sorted(out.glob("*.h"))
    inc = out / "legacy_gen.inc"
    typed_inc = out / "typed_gen.inc"
    subprocess.run(["clang-format", "-i", f"--style=file:{ROOT / '.clang-format'}"] + [str(f) for f in headers] +
                   [str(inc), str(typed_inc)], check=True)
    for f in headers:
        if len(f.read_text().splitlines()) > 700:
            sys.exit(f"gen_shmem_api: {f.name} is over 700 lines; make the chunks smaller")
    targets = {OUT / f.name: f for f in headers}
    targets.update({LEGACY_OUT: inc, TYPED_OUT: typed_inc})
    if "--list" in sys.argv:
        shutil.rmtree(out)
        print(*(p.relative_to(ROOT).as_posix() for p in targets), sep="\n")
        return
    unmarked = generated.unmarked(GENERATOR, {p: f.read_text() for p, f in targets.items()}, ROOT)
    if unmarked:
        shutil.rmtree(out)
        sys.exit("gen_shmem_api: outputs without the mark of codegen/generated.py (" + MARK + "):\n  " +
                 "\n  ".join(unmarked))
    same = sorted(p.name for p in OUT.glob("*.h")) == [f.name for f in headers] and all(
        filecmp.cmp(f, OUT / f.name, shallow=False) for f in headers) and LEGACY_OUT.exists() and filecmp.cmp(
            inc, LEGACY_OUT, shallow=False) and TYPED_OUT.exists() and filecmp.cmp(typed_inc, TYPED_OUT, shallow=False)
    if "--check" in sys.argv:
        shutil.rmtree(out)
        if not same:
            sys.exit("gen_shmem_api: include/compat/shmem/shoal_shmem or src/shmem/legacy_gen.inc or "
                     "src/shmem/typed_gen.inc is stale; run codegen/gen_shmem_api.py")
        return
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*.h"):
        old.unlink()
    for f in headers:
        shutil.copy(f, OUT / f.name)
    shutil.copy(inc, LEGACY_OUT)
    shutil.copy(typed_inc, TYPED_OUT)
    shutil.rmtree(out)


if __name__ == "__main__":
    main()
