"""`python -m hwport --include-dir | --cmake-dir | --pkgconfig-dir`: where a vendor's build
finds the installed C ABI (like `pybind11 --cmakedir`):

    cmake -Dhwport_DIR="$(python -m hwport --cmake-dir)" ...   # find_package(hwport CONFIG)
    PKG_CONFIG_PATH="$(python -m hwport --pkgconfig-dir)" pkg-config --cflags hwport
    cc -I"$(python -m hwport --include-dir)" ...
"""

from __future__ import annotations

import argparse
from pathlib import Path

from hwport.runtime import _core, include_dir


def package_root() -> Path:
    """The installed package's folder that holds the compiled parts (and cmake/, lib/)."""
    return Path(_core.__file__).resolve().parent.parent


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m hwport", description=__doc__.split("\n\n")[0])
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--include-dir", action="store_true",
                       help="the folder to put on the include path (holds hwport/hwport.h)")
    group.add_argument("--cmake-dir", action="store_true",
                       help="the folder of hwportConfig.cmake (hwport_DIR)")
    group.add_argument("--pkgconfig-dir", action="store_true",
                       help="the folder of hwport.pc (PKG_CONFIG_PATH)")
    args = p.parse_args()
    installed = package_root() / "runtime" / "include"
    if args.include_dir:
        print(installed if (installed / "hwport" / "hwport.h").is_file() else include_dir())
    elif args.cmake_dir:
        print(package_root() / "cmake")
    else:
        print(package_root() / "lib" / "pkgconfig")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
