// Compiles the unpacked wheels under argv[3] with Pyodide's own CPython (argv[2]),
// so the bytecode matches the interpreter that will load it.
const { loadPyodide } = require(process.argv[2] + '/pyodide.js');
(async () => {
  const pyodide = await loadPyodide({ indexURL: process.argv[2] + '/' });
  pyodide.FS.mkdir('/src');
  pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root: process.argv[3] }, '/src');
  pyodide.runPython(`
import compileall, os, py_compile
for wheel in sorted(os.listdir('/src')):
    ok = compileall.compile_dir(
        f'/src/{wheel}', ddir='/lib/python3.12/site-packages', quiet=2, workers=1,
        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    if not ok:
        raise SystemExit(f'{wheel} does not compile')
`);
})().catch((error) => { console.error(String(error)); process.exit(1); });
