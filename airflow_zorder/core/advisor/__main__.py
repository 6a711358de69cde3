"""``python -m airflow_zorder.core.advisor``: the advisor's command line (:mod:`.cli`)."""

import sys

from airflow_zorder.core.advisor.cli import main

sys.exit(main())
