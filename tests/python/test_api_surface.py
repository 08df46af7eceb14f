# shoal.core offers nvshmem4py's nvshmem.core names that issue 12 lists, each documented, with an optional
# CUDA stream where nvshmem4py has one; the extension modules' type stubs (.pyi) name exactly what the
# modules define (they are internal: shoal.core and shoal.ep carry the documentation). Pure introspection: no collective call (every PE runs it under shoalrun all the same).
import ast
import importlib
import inspect
import pathlib

import pytest

import shoal
import shoal.core as sc

PACKAGE = pathlib.Path(shoal.__file__).parent

# issue 12 §1: the shoal.core calls a nvshmem4py user needs (stream: the calls that take a CUDA stream).
API = ["init", "finalize", "my_pe", "n_pes", "array", "tensor", "free_array", "free_tensor", "get_peer_array",
       "get_peer_tensor", "put", "get", "barrier", "sync", "reduce", "broadcast", "fcollect", "alltoall",
       "team_my_pe", "team_n_pes", "team_translate_pe", "team_split_strided", "team_destroy"]
WITH_STREAM = ["put", "get", "quiet", "barrier", "barrier_all", "sync", "sync_all", "reduce", "broadcast",
               "fcollect", "alltoall"]


def test_core_has_the_issue_api_each_documented():
    exported = set(sc.__all__)
    for name in API + ["Teams", "ShoalError"]:
        assert name in exported, f"shoal.core.__all__ lacks {name}"
    for name in sc.__all__:
        obj = getattr(sc, name, None)
        assert obj is not None, f"shoal.core.__all__ names {name}, which shoal.core lacks"
        assert (inspect.getdoc(obj) or "").strip(), f"shoal.core.{name} has no docstring"
    assert {t.name for t in sc.Teams} >= {"TEAM_WORLD", "TEAM_SHARED", "TEAM_NODE", "TEAM_SAME_MYPE_NODE", "TEAM_INVALID"}


@pytest.mark.parametrize("name", WITH_STREAM)
def test_stream_is_an_optional_keyword(name):
    param = inspect.signature(getattr(sc, name)).parameters.get("stream")
    assert param is not None, f"shoal.core.{name} takes no stream"
    assert param.default is None, f"shoal.core.{name}: stream must default to None (blocking)"


def _stub_names(path: pathlib.Path) -> set:
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return {n for n in names if not n.startswith("_")}


@pytest.mark.parametrize("module", ["_core", "_ep"])
def test_stubs_name_exactly_what_the_extension_defines(module):
    stub = PACKAGE / f"{module}.pyi"
    assert stub.is_file(), f"shoal/{module}.pyi is missing"
    try:
        mod = importlib.import_module(f"shoal.{module}")
    except ImportError:
        pytest.skip(f"shoal.{module} is not built here (CUDA off)")
    defined = {n for n in dir(mod) if not n.startswith("_")}
    stubbed = _stub_names(stub)
    assert defined - stubbed == set(), f"shoal/{module}.pyi lacks {sorted(defined - stubbed)}"
    assert stubbed - defined == set(), f"shoal/{module}.pyi names {sorted(stubbed - defined)}, which shoal.{module} lacks"
