"""Installs the tenplex Python client: pip install ./clients/python (no network needed)."""
from setuptools import setup

setup(
    name="tenplex",
    version="0.1.0",
    description="Training-side client of the tenplex daemon: save, load, should_stop, dataset reader",
    packages=["tenplex"],
    package_data={"tenplex": ["rulesets/*.json"]},
    python_requires=">=3.8",
    install_requires=["numpy", "requests"],
    extras_require={"torch": ["torch"], "crc": ["crcmod"]},
)
