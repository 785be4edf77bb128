# lit.cfg.py - lit configuration of the golden-text tests (run by ctest, see CMakeLists.txt).
#
# Tests are .tir files (TIR: parser, `npuc opt`) and .graph files (graph text: `npuc graph-opt`,
# tests/lit/graph/) with `// RUN:` lines, and .test files (whole models through `npuc compile`:
# the segment pipeline's printed plans, tests/lit/pipeline/) with `# RUN:` lines; %npuc is the
# npuc binary under test and FileCheck is
# LLVM 16's. Both come in as lit parameters from CMake (`--param npuc=... --param
# filecheck=...`), so the suite always tests the build it belongs to.
import os

import lit.formats

config.name = "npuc"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".tir", ".graph", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = lit_config.params.get("exec_root", config.test_source_root)

npuc = lit_config.params.get("npuc")
filecheck = lit_config.params.get("filecheck", "/usr/bin/FileCheck-16")
if not npuc:
    lit_config.fatal("pass --param npuc=PATH/TO/npuc")
config.substitutions.append(("%npuc", npuc))
config.substitutions.append(("FileCheck", filecheck))
# `not` inverts an exit status (expected-error tests); LLVM ships it next to FileCheck.
config.substitutions.append(("not ", lit_config.params.get("not", "/usr/lib/llvm-16/bin/not") + " "))
# %configs: the repository's target descriptions (instruction emission and PreProcess read one).
config.substitutions.append(
    ("%configs", os.path.normpath(os.path.join(config.test_source_root, "..", "..", "configs"))))
# %models: the bundled ONNX models (tinycnn, branchy, dwnet, mlp, shufflemini).
config.substitutions.append(
    ("%models", os.path.normpath(os.path.join(config.test_source_root, "..", "..", "models"))))
