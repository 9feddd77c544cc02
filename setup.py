"""Packaging for setree: everything is read from settings.ini (the nbdev source of truth); no pkg_resources."""
from configparser import ConfigParser
from pathlib import Path
from setuptools import find_packages, setup

cfg = ConfigParser(delimiters=["="])
cfg.read(Path(__file__).with_name("settings.ini"), encoding="utf-8")
c = cfg["DEFAULT"]
reqs = lambda key: c.get(key, "").split()

STATUSES = ["1 - Planning", "2 - Pre-Alpha", "3 - Alpha", "4 - Beta", "5 - Production/Stable", "6 - Mature", "7 - Inactive"]
LICENSES = {"apache2": ("Apache-2.0", "License :: OSI Approved :: Apache Software License"),
            "mit": ("MIT", "License :: OSI Approved :: MIT License")}
PYTHONS = ["3.11", "3.12", "3.13"]
license_name, license_classifier = LICENSES[c["license"]]
classifiers = ([f"Development Status :: {STATUSES[int(c['status']) - 1]}", f"Intended Audience :: {c['audience'].title()}",
                f"Natural Language :: {c['language'].title()}", license_classifier, "Operating System :: OS Independent"]
               + [f"Programming Language :: Python :: {v}" for v in PYTHONS[PYTHONS.index(c["min_python"]):]])

setup(
    name=c["lib_name"],
    version=c["version"],
    description=c["description"],
    long_description=Path(__file__).with_name("README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    author=c["author"],
    author_email=c["author_email"],
    url=c["git_url"],
    license=license_name,
    classifiers=classifiers,
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
