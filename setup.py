"""Packaging for setree: reads settings.ini (the nbdev source of truth); no pkg_resources."""
from configparser import ConfigParser
from pathlib import Path
from setuptools import find_packages, setup

cfg = ConfigParser(delimiters=["="])
cfg.read(Path(__file__).with_name("settings.ini"), encoding="utf-8")
c = cfg["DEFAULT"]
reqs = lambda key: c.get(key, "").split()

setup(
    name=c["lib_name"],
    version=c["version"],
    description=c["description"],
    long_description=Path(__file__).with_name("README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    author=c["author"],
    author_email=c["author_email"],
    url=c["git_url"],
    license="Apache-2.0",
    keywords=c["keywords"].split(),
    python_requires=">=" + c["min_python"],
    packages=find_packages(include=[c["lib_path"], c["lib_path"] + ".*"]),
    package_data={c["lib_path"]: ["data/*"]},
    include_package_data=True,
    install_requires=reqs("requirements"),
    extras_require={"dev": reqs("dev_requirements") + reqs("mcp_requirements"),
                    "eval": reqs("eval_requirements"),
                    "mcp": reqs("mcp_requirements")},
    entry_points={"console_scripts": c["console_scripts"].split(),
                  "nbdev": [f"{c['lib_path']}={c['lib_path']}._modidx:d"]},
    zip_safe=False,
)
