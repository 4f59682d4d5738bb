"""Parity of kiln.support.xcode with apache-tvm 0.27's tvm.support.xcode, with a stand-in xcrun.

Xcode cannot run on Linux. As in the C++ tests (src/toolchains/xcode_test.cc), a stand-in `xcrun`
and a stand-in clang go first on PATH, for TVM and kiln alike: they record their arguments, one
per line, and write the files the real tools would. The tests compare the recorded command lines
and the results; every test name says "standin".
"""

import os
import re

import pytest
from conftest import same_error, tvm_module

import kiln.support.xcode as kiln_xcode

XCRUN = r"""#!/bin/sh
# Stand-in for Apple's xcrun (test fixture): records argv, writes what the real tool would.
for a in "$@"; do printf '%s\n' "$a" >> "$KILN_STANDIN_LOG"; done
printf '%s\n' '--end--' >> "$KILN_STANDIN_LOG"
if [ -n "$KILN_XCRUN_FAIL" ]; then echo "error: stand-in failure: $KILN_XCRUN_FAIL" >&2; exit 1; fi
out=""; prev=""
for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
case "$3 $4" in
  "-find clang") echo "$KILN_STANDIN_DIR/clang"; exit 0 ;;
  "--show-sdk-path "*) echo "/Applications/Xcode.app/SDKs/My SDK.sdk"; exit 0 ;;
esac
case "$3" in
  metal) printf 'AIR' > "$out" ;;
  metallib) printf 'MTLB-stand-in' > "$out" ;;
esac
if [ "$1" = coremlcompiler ]; then mkdir -p "$4/main.mlmodelc"; fi
exit 0
"""

CLANG = r"""#!/bin/sh
# Stand-in for Xcode's clang (test fixture): records argv, writes the -o file.
printf '%s\n' 'clang' >> "$KILN_STANDIN_LOG"
for a in "$@"; do printf '%s\n' "$a" >> "$KILN_STANDIN_LOG"; done
printf '%s\n' '--end--' >> "$KILN_STANDIN_LOG"
if [ -n "$KILN_CLANG_FAIL" ]; then echo "ld: symbol(s) not found for arm64" >&2; exit 1; fi
out=""; prev=""
for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
printf 'DYLIB' > "$out"
"""


class StandIns:
    """The stand-in tools' directory and their log of invocations."""

    def __init__(self, directory):
        self.directory = directory
        self.log = directory / "argv.log"

    def take_calls(self):
        """The invocations recorded since the last call, each a list of arguments."""
        if not self.log.exists():
            return []
        calls, current = [], []
        for line in self.log.read_text().split("\n")[:-1]:
            if line == "--end--":
                calls.append(current)
                current = []
            else:
                current.append(line)
        self.log.unlink()
        return calls


@pytest.fixture(name="standin")
def fixture_standin(tmp_path, monkeypatch):
    directory = tmp_path / "standin-bin"
    directory.mkdir()
    for name, text in (("xcrun", XCRUN), ("clang", CLANG)):
        (directory / name).write_text(text)
        (directory / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{directory}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("KILN_STANDIN_LOG", str(directory / "argv.log"))
    monkeypatch.setenv("KILN_STANDIN_DIR", str(directory))
    return StandIns(directory)


@pytest.fixture(name="tvm_xcode")
def fixture_tvm_xcode():
    return tvm_module("xcode")


def test_xcrun_output_with_standin(tvm_xcode, standin):
    args = ["-sdk", "macosx", "--show-sdk-path"]
    expected = tvm_xcode.xcrun(args)
    assert kiln_xcode.xcrun(args) == expected == b"/Applications/Xcode.app/SDKs/My SDK.sdk"
    assert standin.take_calls() == [args, args]


def test_xcrun_failure_returns_its_output_with_standin(tvm_xcode, standin, monkeypatch):
    """0.27's xcrun never raises for a failing xcrun: it returns what it printed."""
    del standin
    monkeypatch.setenv("KILN_XCRUN_FAIL", "no such sdk")
    expected = tvm_xcode.xcrun(["-sdk", "nosdk", "--show-sdk-path"])
    assert kiln_xcode.xcrun(["-sdk", "nosdk", "--show-sdk-path"]) == expected
    assert expected == b"error: stand-in failure: no such sdk"


def test_xcrun_missing(tvm_xcode, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert same_error(
        lambda: tvm_xcode.xcrun(["--version"]), lambda: kiln_xcode.xcrun(["--version"])
    ) is FileNotFoundError


def test_create_dylib_output_format(tvm_xcode):
    assert kiln_xcode.create_dylib.output_format == tvm_xcode.create_dylib.output_format == "dylib"


def _dylib_calls(module, standin, tmp_path, name, **kwargs):
    output = str(tmp_path / f"{name}.dylib")
    default_objects = [str(tmp_path / "lib0.o"), str(tmp_path / "dir with space" / "lib1.o")]
    objects = kwargs.pop("objects", default_objects)
    module.create_dylib(output, objects, "arm64", **kwargs)
    assert (tmp_path / f"{name}.dylib").read_bytes() == b"DYLIB"
    return [[arg.replace(output, "<output>") for arg in call] for call in standin.take_calls()]


@pytest.mark.parametrize("sdk", ["iphoneos", "iphonesimulator"])
def test_create_dylib_ios_same_commands_with_standin(tvm_xcode, standin, tmp_path, sdk):
    expected = _dylib_calls(tvm_xcode, standin, tmp_path, "tvm", sdk=sdk)
    assert _dylib_calls(kiln_xcode, standin, tmp_path, "kiln", sdk=sdk) == expected
    assert expected[2][:8] == [
        "clang", "-dynamiclib", "-arch", "arm64", "-isysroot",
        "/Applications/Xcode.app/SDKs/My SDK.sdk", "-mios-version-min=13.0", "-o",
    ]  # fmt: skip
    expected = _dylib_calls(tvm_xcode, standin, tmp_path, "tvm", sdk=sdk, min_os_version="15.2")
    result = _dylib_calls(kiln_xcode, standin, tmp_path, "kiln", sdk=sdk, min_os_version="15.2")
    assert result == expected
    assert "-mios-version-min=15.2" in expected[2]


def test_create_dylib_one_object_as_str_with_standin(tvm_xcode, standin, tmp_path):
    obj = str(tmp_path / "lib0.o")
    expected = _dylib_calls(tvm_xcode, standin, tmp_path, "tvm", objects=obj, sdk="iphoneos")
    result = _dylib_calls(kiln_xcode, standin, tmp_path, "kiln", objects=obj, sdk="iphoneos")
    assert result == expected


def test_create_dylib_macosx_passes_no_empty_argument_with_standin(tvm_xcode, standin, tmp_path):
    """Deliberate difference: for macosx without min_os_version 0.27 passes an empty argument
    to clang (its version option is ""), which a real clang rejects as a missing input file
    ("no such file or directory: ''"); kiln passes nothing there. Otherwise the same command."""
    expected = _dylib_calls(tvm_xcode, standin, tmp_path, "tvm")
    result = _dylib_calls(kiln_xcode, standin, tmp_path, "kiln")
    assert "" in expected[2]
    assert result[:2] == expected[:2]
    assert result[2] == [arg for arg in expected[2] if arg != ""]


def test_create_dylib_macosx_min_version_flag_with_standin(tvm_xcode, standin, tmp_path):
    """Deliberate difference: 0.27 spells every minimum version -mios-version-min, which on the
    macosx SDK makes clang build for iOS; kiln gives macOS -mmacosx-version-min."""
    expected = _dylib_calls(tvm_xcode, standin, tmp_path, "tvm", min_os_version="11.0")
    result = _dylib_calls(kiln_xcode, standin, tmp_path, "kiln", min_os_version="11.0")
    assert "-mios-version-min=11.0" in expected[2]
    assert result[2] == [
        "-mmacosx-version-min=11.0" if arg == "-mios-version-min=11.0" else arg
        for arg in expected[2]
    ]


def test_create_dylib_clang_fails_with_standin(tvm_xcode, standin, tmp_path, monkeypatch):
    monkeypatch.setenv("KILN_CLANG_FAIL", "1")
    out = str(tmp_path / "lib.dylib")
    assert same_error(
        lambda: tvm_xcode.create_dylib(out, ["lib0.o"], "arm64", sdk="iphoneos"),
        lambda: kiln_xcode.create_dylib(out, ["lib0.o"], "arm64", sdk="iphoneos"),
    ) is RuntimeError
    with pytest.raises(RuntimeError, match="Compilation error:(.|\n)*symbol"):
        kiln_xcode.create_dylib(out, ["lib0.o"], "arm64", sdk="iphoneos")
    assert standin.take_calls()


def test_create_dylib_unsupported_sdk_with_standin(tvm_xcode, standin, tmp_path):
    del standin
    out = str(tmp_path / "lib.dylib")
    assert same_error(
        lambda: tvm_xcode.create_dylib(out, ["lib0.o"], "arm64", sdk="watchos"),
        lambda: kiln_xcode.create_dylib(out, ["lib0.o"], "arm64", sdk="watchos"),
    ) is RuntimeError


METAL = "kernel void add_one(device float* a [[buffer(0)]]) { a[0] += 1.0f; }\n"


def _metal_calls(standin):
    """The recorded calls with the temporary directory blanked (it differs between the sides)."""
    return [
        [re.sub(r"^/.*/(my_lib\.\w+)$", r"<tmp>/\1", arg) for arg in call]
        for call in standin.take_calls()
    ]


@pytest.mark.parametrize("sdk", ["macosx", "iphoneos"])
def test_compile_metal_same_commands_with_standin(tvm_xcode, standin, sdk):
    expected = tvm_xcode.compile_metal(METAL, sdk=sdk)
    expected_calls = _metal_calls(standin)
    result = kiln_xcode.compile_metal(METAL, sdk=sdk)
    assert type(result) is type(expected) is bytearray
    assert result == expected == bytearray(b"MTLB-stand-in")
    assert _metal_calls(standin) == expected_calls
    metallib_step = ["-sdk", sdk, "metallib", "<tmp>/my_lib.air", "-o", "<tmp>/my_lib.metallib"]
    assert expected_calls[1] == metallib_step


def test_compile_metal_min_os_version_with_standin(tvm_xcode, standin):
    tvm_xcode.compile_metal(METAL, sdk="iphonesimulator", min_os_version="16.4")
    expected = _metal_calls(standin)
    kiln_xcode.compile_metal(METAL, sdk="iphonesimulator", min_os_version="16.4")
    assert _metal_calls(standin) == expected
    assert "-mios-version-min=16.4" in expected[0]


def test_compile_metal_macosx_min_version_with_standin(tvm_xcode, standin):
    """Deliberate difference, as for create_dylib: -mmacosx-version-min for macosx."""
    tvm_xcode.compile_metal(METAL, min_os_version="12.0")
    expected = _metal_calls(standin)
    kiln_xcode.compile_metal(METAL, min_os_version="12.0")
    result = _metal_calls(standin)
    assert "-mios-version-min=12.0" in expected[0]
    assert result[0] == [
        "-mmacosx-version-min=12.0" if arg == "-mios-version-min=12.0" else arg
        for arg in expected[0]
    ]
    assert result[1] == expected[1]


def test_compile_metal_path_target_with_standin(tvm_xcode, standin, tmp_path):
    del standin
    tvm_lib = tvm_xcode.compile_metal(METAL, path_target=str(tmp_path / "tvm.metallib"))
    kiln_lib = kiln_xcode.compile_metal(METAL, path_target=str(tmp_path / "kiln.metallib"))
    assert kiln_lib == tvm_lib
    assert (tmp_path / "kiln.metallib").read_bytes() == (tmp_path / "tvm.metallib").read_bytes()


def test_compile_metal_failure_returns_none_with_standin(tvm_xcode, standin, monkeypatch, capsys):
    del standin
    monkeypatch.setenv("KILN_XCRUN_FAIL", "metal")
    assert tvm_xcode.compile_metal(METAL) is None
    assert "Compilation error" in capsys.readouterr().err
    assert kiln_xcode.compile_metal(METAL) is None
    assert "stand-in failure" in capsys.readouterr().err


def test_compile_metal_unsupported_sdk(tvm_xcode, standin):
    del standin
    assert same_error(
        lambda: tvm_xcode.compile_metal(METAL, sdk="watchos"),
        lambda: kiln_xcode.compile_metal(METAL, sdk="watchos"),
    ) is RuntimeError


def _varint(value):
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _field(number, payload):
    """A length-delimited protobuf field."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _mlmodel(inputs, outputs, short_description):
    """A Core ML Model as protobuf bytes (Model.proto: specificationVersion 1, description 2 with
    input 1, output 10 and metadata 100, whose shortDescription is 1), as coremltools saves it."""
    description = b"".join(_field(1, _field(1, name.encode())) for name in inputs)
    description += b"".join(_field(10, _field(1, name.encode())) for name in outputs)
    if short_description:
        description += _field(100, _field(1, short_description.encode()))
    return _varint(1 << 3) + _varint(4) + _field(2, description)


class FakeCoreMLModel:
    """What compile_coreml uses of a coremltools MLModel: its input and output descriptions
    (iterating gives the names), a writable short_description, save(path) writing the model."""

    def __init__(self):
        self.input_description = {"x": "input tensor", "y": "second input"}
        self.output_description = {"z": "the sum"}
        self.short_description = ""

    def save(self, path):
        with open(path, "wb") as out:
            out.write(_mlmodel(self.input_description, self.output_description,
                               self.short_description))  # fmt: skip


DESCRIPTION = '{"inputs": ["x", "y"], "outputs": ["z"]}'


def test_compile_coreml_with_standin(tvm_xcode, standin, tmp_path):
    results = []
    for side, module in (("tvm", tvm_xcode), ("kiln", kiln_xcode)):
        out_dir = tmp_path / side
        out_dir.mkdir()
        model = FakeCoreMLModel()
        compiled = module.compile_coreml(model, out_dir=str(out_dir))
        calls = [[arg.replace(str(out_dir), "<out>") for arg in c] for c in standin.take_calls()]
        saved = (out_dir / "main.mlmodel").read_bytes()
        compiled = compiled.replace(str(out_dir), "<out>")
        results.append((compiled, model.short_description, saved, calls))
    assert results[1] == results[0]
    assert results[0][0] == "<out>/main.mlmodelc"
    assert results[0][1] == DESCRIPTION
    assert results[0][2] == _mlmodel(["x", "y"], ["z"], DESCRIPTION)
    assert results[0][3] == [["coremlcompiler", "compile", "<out>/main.mlmodel", "<out>"]]


def test_compile_coreml_of_a_saved_model_with_standin(tvm_xcode, standin, tmp_path):
    """kiln also takes a saved .mlmodel: its copy gets the description 0.27 writes into a model
    object (the saved file itself is left alone)."""
    tvm_model = FakeCoreMLModel()
    tvm_xcode.compile_coreml(tvm_model, out_dir=str(tmp_path))
    expected = (tmp_path / "main.mlmodel").read_bytes()
    saved = tmp_path / "saved.mlmodel"
    FakeCoreMLModel().save(saved)
    (tmp_path / "kiln").mkdir()
    compiled = kiln_xcode.compile_coreml(str(saved), out_dir=str(tmp_path / "kiln"))
    assert compiled == str(tmp_path / "kiln" / "main.mlmodelc")
    assert (tmp_path / "kiln" / "main.mlmodel").read_bytes() == expected
    assert saved.read_bytes() == _mlmodel(["x", "y"], ["z"], "")
    assert len(standin.take_calls()) == 2


def test_compile_coreml_nothing_compiled_with_standin(tvm_xcode, standin, tmp_path):
    """The stand-in compiler makes main.mlmodelc only: for another name both raise."""
    del standin
    assert same_error(
        lambda: tvm_xcode.compile_coreml(FakeCoreMLModel(), "other", str(tmp_path)),
        lambda: kiln_xcode.compile_coreml(FakeCoreMLModel(), "other", str(tmp_path)),
    ) is RuntimeError
