"""pip install bindings/python: pyproject.toml describes the project; this
file only writes gossipd/_proto_version.py into the built package from
the source tree's proto/proto.h, the protocol version's one place
(gossipd/_proto_h.py)."""
import importlib.util
import os

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


class BuildPyWithProtoVersion(build_py):
    def run(self):
        super().run()
        spec = importlib.util.spec_from_file_location(
            "_proto_h", os.path.join(HERE, "gossipd", "_proto_h.py"))
        proto_h = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(proto_h)
        if not os.path.isfile(proto_h.CHECKOUT_PROTO_H):
            raise SystemExit("gossipd: %s is missing: build the package from the "
                             "gossipd source tree" % proto_h.CHECKOUT_PROTO_H)
        proto_h.write(proto_h.CHECKOUT_PROTO_H,
                      os.path.join(self.build_lib, "gossipd", "_proto_version.py"))


setup(cmdclass={"build_py": BuildPyWithProtoVersion})
