# Runs in the worker before Panel is imported; build.py fills in PANEL_ROOT.
import os

import pyodide.ffi

os.environ["PANEL_CDN_ROOT"] = "PANEL_ROOT"
if not hasattr(pyodide.ffi, "jsnull"):  # Panel 1.9.4 checks for it; Pyodide 0.27 maps null to None
    pyodide.ffi.jsnull = type("JsNull", (), {})()
