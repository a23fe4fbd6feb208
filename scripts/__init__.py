"""The Python behind the bash scripts in this folder (each script makes sure .venv is there,
then runs one of these modules with `python -m`): the benchmarks (`scripts.benchmarks`) and
the quickstart's steps. Not part of the installed package."""
