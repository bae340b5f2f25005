# Runs in the worker before Panel is imported; the build (sitebuild.page.convert) fills
# in PANEL_ROOT (sitebuild/fills.py).
import os
import sys
import types

import pyodide.ffi

os.environ["PANEL_CDN_ROOT"] = __LAB_PANEL_ROOT__  # noqa: F821 (a fill)
if not hasattr(pyodide.ffi, "jsnull"):  # Panel 1.9.4 checks for it; Pyodide 0.27 maps null to None
    pyodide.ffi.jsnull = type("JsNull", (), {})()
# Panel's worker patches requests and urllib with pyodide-http where it is installed,
# and else imports pandas to patch its file readers. The app fetches nothing: an empty
# pyodide_http spares both (requests, urllib3 and their kin: 1.1 MB of the compressed
# memory snapshot; pandas: half of the worker's import time).
sys.modules["pyodide_http"] = types.ModuleType("pyodide_http", "The app fetches nothing.")
sys.modules["pyodide_http"].patch_all = lambda: None
