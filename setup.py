"""Build fastplan's Cython extensions; all metadata lives in pyproject.toml.

Environment (a switch is on when set to anything but empty or ``0``):

* ``FASTPLAN_NO_EXTENSIONS``      build nothing: fastplan runs its pure-Python fallback.
* ``FASTPLAN_REQUIRE_EXTENSIONS`` a missing Cython or C compiler, or a failed build, is fatal.
* ``FASTPLAN_CYTHON_DEBUG``       boundscheck and initializedcheck on, plus annotated HTML.
* ``FASTPLAN_PGO``                a profile-guided build (GCC; ``make build FASTPLAN_PGO=1``): build
  instrumented, run ``tools/pgo_train.py`` on that build, build again with its counts. A
  failed training run gives a plain build with a warning (fatal under
  ``FASTPLAN_REQUIRE_EXTENSIONS``); another compiler, a plain build with a note.
"""

import os
import shlex
import subprocess
import sys
import sysconfig
from concurrent.futures import ThreadPoolExecutor

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CCompilerError, ExecError, PlatformError
from setuptools.modified import newer_group

HERE = os.path.dirname(os.path.abspath(__file__))

# fastplan modules that are compiled, by dotted name under fastplan ("search.block":
# fastplan/search/block.pyx, the module fastplan.search.block).
MODULES = ["opinfo", "stream.relative", "engine.builder_alloc", "engine.builder_cores",
           "engine.builder_boundary", "engine.builder", "engine.scoring",
           "engine.trace_fuser_cores", "engine.trace_fuser", "fusers.elemwise", "fusers.matmul",
           "fusers.reduce", "fusers.reduce_broadcasted_full", "fusers.reduce_broadcasted",
           "fusers.nhwc", "fusers.registry", "_keys", "search.strategy", "search.graph",
           "search.block", "search.merging", "search.repair", "search.search", "stream._trie",
           "stream.cache", "stream.queue", "stream.queue_execution", "stream.queue_relative",
           "stream.processor", "planner", "launch.layout", "launch.vectorization",
           "launch.handles_layouts", "launch.handles_ops", "launch.handles",
           "launch.launch_planners_output", "launch.launch_planners", "launch.launch_vectorize",
           "launch.launch", "launch.launch_memo", "launch.execute",
           "ingest.validate", "ingest.stream", "stream.incremental", "frontend.status",
           "frontend.tensor", "frontend.session"]


def _init_symbol(module):
    """The ``PyInit_`` function of a module of MODULES: Cython names it after the last part of
    the dotted name only (``search.block``: ``PyInit_block``)."""
    return "PyInit_" + module.rpartition(".")[2]


# Every module's PyInit_ is a symbol of the one bundle: two modules may not share a last part.
_SYMBOLS = [_init_symbol(module) for module in MODULES]
if len(set(_SYMBOLS)) != len(_SYMBOLS):
    raise SystemExit("setup.py: two fastplan modules share a PyInit_ symbol: "
                     + ", ".join(sorted({s for s in _SYMBOLS if _SYMBOLS.count(s) > 1})))


def _flag(name):
    return os.environ.get(name, "") not in ("", "0")


NO_EXTENSIONS = _flag("FASTPLAN_NO_EXTENSIONS")
# Every module's C file is linked into one shared library, fastplan/_bundle<suffix>, and
# fastplan/__init__.py imports each module from it (by its own PyInit_, see _init_symbol). One
# library keeps the hot code of all modules in one region and calls the interpreter through one
# PLT, so that a call starting on cold caches reloads less (docs/fastplan.md, "One library").
# It is the only layout: there is no library per module.
BUNDLE_NAME = "fastplan._bundle"  # fastplan/__init__.py's _BUNDLE names the same file
REQUIRE_EXTENSIONS = _flag("FASTPLAN_REQUIRE_EXTENSIONS")
DEBUG = _flag("FASTPLAN_CYTHON_DEBUG")
PGO = _flag("FASTPLAN_PGO") and not DEBUG
PGO_TRAINING = os.path.join(HERE, "tools", "pgo_train.py")
# The two builds of a profile-guided build. ``-fprofile-update=single``: the planner is
# single-threaded. Using the counts: ``-fprofile-correction`` accepts the small inconsistencies
# of counters, a module the training never ran keeps its plain optimisation
# (``-Wno-missing-profile``), and the profile's extra inlining makes GCC warn of variables it
# can no longer prove set (Cython's loop variables, set on every path that reads them).
PGO_GENERATE = ["-fprofile-generate", "-fprofile-update=single"]
PGO_USE = ["-fprofile-use", "-fprofile-correction", "-Wno-missing-profile",
           "-Wno-maybe-uninitialized"]
# Every module at -O3, whatever the interpreter was built with (pyenv's CPython: -O3; Ubuntu's
# 3.12: -O2), so that an instruction count on one machine and a time on another are of the
# same code. The last -O given wins.
UNIX_COMPILE_ARGS = ["-O3"]
# Cython and the C compiler run this many modules at a time (default: one per core).
JOBS = int(os.environ.get("FASTPLAN_BUILD_JOBS") or os.cpu_count() or 1)

# CPython 3.12 deprecated a dict's version tag (PEP 699; removed in 3.14), so Cython stopped
# caching module globals by it there: every read of an imported name (a refimpl class, a status
# constant) became a dict lookup, a measurable share of fastplan's planning. 3.12 and 3.13 still
# bump the tag on every change of the dict, so the cache stays exact there; turn it back on.
# Cython itself keeps it off for free-threaded builds.
DICT_VERSIONS = (3, 12) <= sys.version_info[:2] < (3, 14)

# The only place compiler directives are set (every .pyx carries just language_level).
DIRECTIVES = {
    "language_level": 3,
    "binding": True,
    "embedsignature": True,
    "boundscheck": DEBUG,
    "wraparound": False,
    "initializedcheck": DEBUG,
    # refimpl uses Python's // and % (floor) semantics; C division truncates.
    "cdivision": False,
}


def _warn(lines):
    """Print a boxed message to stderr."""
    width = max(len(line) for line in lines)
    rule = "*" * (width + 4)
    body = "\n".join(f"* {line.ljust(width)} *" for line in lines)
    print(f"\n{rule}\n{body}\n{rule}\n", file=sys.stderr)


def _fallback(reason):
    """Report that fastplan will run pure Python; fatal under FASTPLAN_REQUIRE_EXTENSIONS."""
    lines = [
        "WARNING: fastplan's compiled extensions were not built.",
        f"Reason: {reason}",
        "fastplan falls back to its pure-Python modules (same results, slower).",
        "To build them: install Cython>=3.1 and a C compiler, then run `make build`.",
    ]
    if REQUIRE_EXTENSIONS:
        lines[0] = "ERROR: fastplan's compiled extensions could not be built."
        lines[2] = "FASTPLAN_REQUIRE_EXTENSIONS is set, so this is fatal."
        _warn(lines)
        raise SystemExit(1)
    _warn(lines)


# Which mode (debug or not) the extensions in place were last built in.
MODE_FILE = os.path.join(HERE, "build", "fastplan-build-mode")


class optional_build_ext(build_ext):
    """build_ext that turns a compiler failure into a warning, unless extensions are required.

    It also rebuilds everything when the build mode (debug, profile-guided or plain) changed
    since the last build, since the up-to-date check compares only file times; the
    profile-guided build is ``_profile_guided``.
    """

    def run(self):
        if not self.parallel:  # compile the modules side by side (one per core)
            self.parallel = JOBS
        mode = "debug" if DEBUG else "pgo" if PGO else "release"
        self._compiler_choice = self.compiler
        self.force = self.force or _read(MODE_FILE) != mode
        if self.extensions:
            self._drop_module_libraries()
        try:
            if PGO and self.extensions and (self.force or self._stale()):
                mode = self._profile_guided()
            else:
                super().run()
        except (PlatformError, ExecError, CCompilerError) as exc:
            _fallback(f"{type(exc).__name__}: {exc}")
            return
        if self.extensions:
            _write_mode(mode)

    def _drop_module_libraries(self):
        """Before building, remove any library of a single module (left by a build from before
        the bundle was the only layout) from the build directory a wheel is made of and, built
        in place, from the tree: it would ship beside the bundle, and after a failed build
        (no bundle, so fastplan's finder steps aside) it would be imported in its place."""
        names = [f"fastplan.{name}" for name in MODULES]
        roots = [self.build_lib] + ([HERE] if self.inplace else [])
        for name in names:
            for root in roots:
                path = os.path.join(HERE, root, self.get_ext_filename(name))
                if os.path.exists(path):
                    os.remove(path)

    def get_export_symbols(self, ext):
        """The bundle's exported names: every module's ``PyInit_`` (only a Windows link
        exports no more than it is told; elsewhere they are exported anyway)."""
        if ext.name == BUNDLE_NAME:
            return list(_SYMBOLS)
        return super().get_export_symbols(ext)

    def _stale(self):
        """Whether a module's C source changed since its extension was built."""
        return any(newer_group(ext.sources + list(ext.depends),
                               self.get_ext_fullpath(ext.name))
                   for ext in self.extensions)

    def _profile_guided(self):
        """FASTPLAN_PGO: every module built instrumented, the training run, every module built
        again with the counts it wrote (next to the object files, in ``build_temp``). The
        build mode to record: ``pgo``, or ``pgo-untrained`` after a failed training, so that
        the next build tries again."""
        reason = _pgo_unsupported()
        if reason:
            _warn([f"NOTE: FASTPLAN_PGO needs GCC ({reason}): a plain build instead."])
            super().run()
            return "pgo"  # nothing a later build could do better
        for root, _, files in os.walk(self.build_temp):
            for name in files:
                if name.endswith(".gcda"):  # a previous training's counts
                    os.remove(os.path.join(root, name))
        self.force = True
        # until the build with the counts is in place, the modules in place are instrumented
        # (or half built): a build interrupted here must not find them up to date next time
        _write_mode("pgo-instrumented")
        self._set_flags(PGO_GENERATE, PGO_GENERATE)
        self._build_all()
        try:
            trained = self._train()
            self._set_flags(PGO_USE if trained else [], [])
            self._build_all()
        except BaseException:
            for ext in self.extensions:  # no instrumented module may stay behind
                self._discard(ext)
            raise
        return "pgo" if trained else "pgo-untrained"

    def _build_all(self):
        """One more ``build_ext.run`` (it replaces the compiler's name by the compiler)."""
        self.compiler = self._compiler_choice
        super().run()

    def _set_flags(self, compile_args, link_args):
        """Every extension's own compile and link arguments, plus these."""
        for ext in self.extensions:
            base = getattr(ext, "_base_args", None)
            if base is None:
                base = ext._base_args = (list(ext.extra_compile_args), list(ext.extra_link_args))
            ext.extra_compile_args = base[0] + compile_args
            ext.extra_link_args = base[1] + link_args

    def _train(self):
        """Run tools/pgo_train.py on the instrumented build; whether it trained."""
        tree = HERE if self.inplace else os.path.abspath(self.build_lib)
        env = {key: value for key, value in os.environ.items()
               if key != "FASTPLAN_NO_EXTENSIONS"}
        env["PYTHONPATH"] = os.pathsep.join(
            [tree] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        try:
            # the counts go next to the object files, named as the compiler saw them: from
            # the directory the build runs in
            done = subprocess.run([sys.executable, PGO_TRAINING], env=env, timeout=900,
                                  capture_output=True, text=True, check=False)
        except (OSError, subprocess.SubprocessError) as exc:
            reason = f"{type(exc).__name__}: {exc}"
        else:
            if done.returncode == 0:
                return True
            reason = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            reason = f"exit status {done.returncode}: {reason[0]}"
        lines = ["WARNING: fastplan's profile-guided training run failed: a plain build instead.",
                 f"Reason: {reason}"]
        if REQUIRE_EXTENSIONS:  # CI builds what a user gets: the training must work
            lines[0] = "ERROR: fastplan's profile-guided training run failed."
            _warn(lines + ["FASTPLAN_REQUIRE_EXTENSIONS is set, so this is fatal."])
            raise SystemExit(1)
        _warn(lines)
        return False

    def build_extension(self, ext):
        if len(ext.sources) > 1 and self.parallel and self.parallel > 1:
            _compile_in_parallel(self.compiler, self.parallel)
        if self.compiler.compiler_type == "unix":
            extra = list(UNIX_COMPILE_ARGS)
            if DICT_VERSIONS:
                # reading the deprecated tag is the point (see DICT_VERSIONS): no warning per
                # module
                extra.append("-Wno-deprecated-declarations")
            ext.extra_compile_args = [*ext.extra_compile_args,
                                      *[a for a in extra if a not in ext.extra_compile_args]]
        try:
            super().build_extension(ext)
        except (CCompilerError, ExecError, PlatformError) as exc:
            self._discard(ext)
            _fallback(f"{ext.name}: {type(exc).__name__}: {exc}")

    def _discard(self, ext):
        """Drop a module that failed to build: no stale copy may be imported in its place."""
        ext.optional = True  # copy_extensions_to_source skips optional modules not built
        for path in (self.get_ext_fullpath(ext.name), self.get_ext_filename(ext.name)):
            path = os.path.join(HERE, path)
            if os.path.exists(path):
                os.remove(path)


def _compile_in_parallel(compiler, jobs):
    """Make ``compiler.compile`` run its sources ``jobs`` at a time (the bundle is one
    extension of 30 C files, which build_ext compiles one after another). The steps are
    distutils' own ``CCompiler.compile``, each object handed to a thread; every object is
    rebuilt, as there."""
    if getattr(compiler, "_fastplan_parallel", False):
        return

    def compile(sources, output_dir=None, macros=None, include_dirs=None, debug=False,
                extra_preargs=None, extra_postargs=None, depends=None):
        macros, objects, extra_postargs, pp_opts, build = compiler._setup_compile(
            output_dir, macros, include_dirs, sources, depends, extra_postargs)
        cc_args = compiler._get_cc_args(pp_opts, debug, extra_preargs)

        def one(obj):
            src, ext = build[obj]
            compiler._compile(obj, src, ext, cc_args, extra_postargs, pp_opts)

        with ThreadPoolExecutor(jobs) as pool:
            list(pool.map(one, objects))  # list(): the first failure is raised here
        return objects

    compiler.compile = compile
    compiler._fastplan_parallel = True


def _pgo_unsupported():
    """Why this C compiler can't do FASTPLAN_PGO's build (GCC's profile files), or None."""
    compiler = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    try:
        version = subprocess.run([*compiler[:1], "--version"], capture_output=True, text=True,
                                 timeout=60, check=False).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{compiler[0]}: {exc}"
    if "Free Software Foundation" not in version or "clang" in version.lower():
        return f"{compiler[0]} is not GCC"
    return None


def _write_mode(mode):
    os.makedirs(os.path.dirname(MODE_FILE), exist_ok=True)
    with open(MODE_FILE, "w") as f:
        f.write(mode)


def _read(path):
    """The text of ``path``, or None if there is no such file."""
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return f.read()


def _ext_modules():
    if NO_EXTENSIONS:
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        _fallback("Cython is not installed")
        return []
    # debug builds also check every index into fastplan's C vectors (fastplan/_vec.pxd)
    macros = [("FASTPLAN_DEBUG_CHECKS", "1")] if DEBUG else []
    if DICT_VERSIONS:
        macros.append(("CYTHON_USE_DICT_VERSIONS", "1"))
    extensions = [Extension(f"fastplan.{m}", [f"fastplan/{m.replace('.', '/')}.pyx"],
                            define_macros=macros)
                  for m in MODULES]
    modules = cythonize(
        extensions,
        compiler_directives=DIRECTIVES,
        annotate=DEBUG,
        nthreads=JOBS,
        # one C file per mode, so that switching modes never reuses the other's
        build_dir="build/cython-debug" if DEBUG else "build/cython",
    )
    # each C file keeps its module's full name and its PyInit_ (unique: _SYMBOLS); Cython's own
    # functions are static to their file, so the files link together
    return [Extension(BUNDLE_NAME, [source for ext in modules for source in ext.sources],
                      define_macros=macros,
                      depends=sorted({path for ext in modules for path in ext.depends}))]


setup(ext_modules=_ext_modules(), cmdclass={"build_ext": optional_build_ext})
