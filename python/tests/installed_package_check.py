"""After `pip install .` into a fresh venv (the python_install_check target): the installed kiln,
not this checkout's, imports quickly and works. Exits non-zero on the first failure."""

import os
import subprocess
import sys
import tempfile
import time


def main():
    start = time.perf_counter()
    import kiln  # pylint: disable=import-outside-toplevel

    import_ms = (time.perf_counter() - start) * 1e3
    import kiln.support.cc as cc  # pylint: disable=import-outside-toplevel
    from kiln.support import tar, utils  # pylint: disable=import-outside-toplevel

    site = os.path.dirname(os.path.dirname(kiln.__file__))
    assert "site-packages" in site, f"kiln imported from {site}, not from the venv"
    program = os.environ.get("KILN_SERVICE_PROGRAM", "")
    assert program.startswith(site) and os.access(program, os.X_OK), program
    version = subprocess.run([program, "--version"], capture_output=True, text=True, check=True)
    with tempfile.TemporaryDirectory() as work:
        source = os.path.join(work, "add.c")
        with open(source, "w", encoding="utf-8") as file:
            # get_cc() is g++ here: C linkage keeps the symbol's name plain.
            file.write('#ifdef __cplusplus\nextern "C"\n#endif\nint add(int a, int b) { return a + b; }\n')
        lib = os.path.join(work, "libadd.so")
        cc.create_shared(lib, [source])
        assert cc.get_global_symbol_section_map(lib)["add"] == "T"
        tar.tar(os.path.join(work, "a.tar"), [lib])
        assert utils.which("sh")
    # The pool's workers run `python -m kiln.support.popen_worker`: the installed package's.
    from kiln.support import popen_pool  # pylint: disable=import-outside-toplevel

    with popen_pool.PopenPoolExecutor(max_workers=1, timeout=60) as pool:
        assert pool.submit(os.getpid).result() != os.getpid()
        assert pool.submit(abs, -7).result() == 7
    # The hook: an entry point `import tvm` calls; nothing of kiln is imported at startup.
    from importlib.metadata import entry_points  # pylint: disable=import-outside-toplevel

    hooks = [e.value for e in entry_points(group="tvm.backends") if e.name == "kiln"]
    assert hooks == ["kiln._tvm_hook:autoload"], hooks
    code = "import sys; print(sorted(m for m in sys.modules if m.split('.')[0] == 'kiln'))"
    env = {k: v for k, v in os.environ.items() if k != "KILN_TVM"}
    for variable in ({}, {"KILN_TVM": "1"}):
        seen = subprocess.run([sys.executable, "-c", code], env=dict(env, **variable), check=True,
                              capture_output=True, text=True).stdout.strip()
        assert seen == "[]", f"{variable}: {seen}"
    print(f"installed kiln {kiln.__version__} from {site}: import kiln {import_ms:.1f} ms; "
          f"{version.stdout.strip()}; create_shared, symbol map, tar, popen_pool, "
          "tvm.backends entry point ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
