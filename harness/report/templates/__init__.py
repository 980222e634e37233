"""Jinja2 templates of the HTML report.

A package only so that setuptools' package discovery (``harness*``) and the ``*.j2`` /
``*.css`` package-data patterns ship these files in a wheel, not just in an editable
install.
"""
