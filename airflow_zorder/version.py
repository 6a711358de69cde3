"""The provider's version (one place; ``airflow_zorder.__version__``, the provider info and the job zip read it)."""

__version__ = "0.1.0"
