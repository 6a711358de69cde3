"""The Airflow UI plugin: table health pages served by the Airflow API server under ``/zorder``.

Registered through the ``airflow.plugins`` entry point (:class:`~airflow_zorder.plugins.plugin.ZorderPlugin`).
Modules: ``urls`` (links to the pages, also the operators' extra links), ``discovery`` (which tables),
``page_data`` (what the pages show, from ``core.policy.recluster_policy`` / ``core.policy.metrics`` /
``core.stats.stats_store``), ``charts`` (server-side SVG) and ``page_charts`` (the table page's charts),
``rendering`` (the Jinja environment and its filters), ``auth`` (Airflow's own authentication), ``app`` (the
FastAPI routes).
"""
