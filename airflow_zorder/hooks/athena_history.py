"""AthenaQueryHistoryHook: a workgroup's recent queries through Athena's API, with an ``aws`` connection.

``list_query_executions`` pages through the workgroup's query ids (newest first) and ``batch_get_query_execution``
reads them 50 at a time (one ``get_query_execution`` per id where the endpoint lacks the batch call, as moto's
does); :func:`~airflow_zorder.core.advisor.query_history.athena_statements` keeps the queries that succeeded.
Install with ``pip install 'airflow-zorder[amazon]'``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from airflow_zorder.core.advisor.query_history import athena_statements
from airflow_zorder.core.advisor.workload import Statement
from airflow_zorder.core.errors import InvalidInputError

__all__ = ["AthenaQueryHistoryHook"]

_BATCH = 50  # batch_get_query_execution's limit
_NO_BATCH = {"500", "501", "InternalFailure", "NotImplemented", "UnknownOperationException"}


def _aws_base_hook() -> Any:
    try:
        from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook
    except ImportError as exc:
        raise InvalidInputError(
            "Athena's query history needs the amazon provider: pip install 'airflow-zorder[amazon]'"
        ) from exc
    return AwsBaseHook


class AthenaQueryHistoryHook:
    """The queries of an Athena workgroup as workload statements.

    :param aws_conn_id: an ``aws`` connection (keys, region, ``endpoint_url``, assumed role: the amazon provider's)
    :param workgroup: the workgroup whose history is read
    :param max_queries: read at most this many of the newest query executions
    """

    def __init__(self, aws_conn_id: str = "aws_default", workgroup: str = "primary", max_queries: int = 10_000) -> None:
        self.aws_conn_id, self.workgroup, self.max_queries = aws_conn_id, workgroup, max_queries

    def get_conn(self) -> Any:
        """The boto3 Athena client of the connection."""
        return _aws_base_hook()(aws_conn_id=self.aws_conn_id, client_type="athena").get_conn()

    def query_executions(self) -> Iterator[dict[str, Any]]:
        """The workgroup's ``QueryExecution`` records, newest first, at most ``max_queries``."""
        from botocore.exceptions import ClientError

        client = self.get_conn()
        ids: list[str] = []
        kwargs: dict[str, Any] = {"WorkGroup": self.workgroup, "MaxResults": _BATCH}
        while len(ids) < self.max_queries:
            page = client.list_query_executions(**kwargs)
            ids += page.get("QueryExecutionIds", [])
            if not page.get("NextToken"):
                break
            kwargs["NextToken"] = page["NextToken"]
        ids = ids[: self.max_queries]
        batched = True
        for i in range(0, len(ids), _BATCH):
            chunk = ids[i : i + _BATCH]
            if batched:
                try:
                    yield from client.batch_get_query_execution(QueryExecutionIds=chunk)["QueryExecutions"]
                    continue
                except ClientError as exc:  # an endpoint without the batch call (moto answers 500): one by one
                    if exc.response.get("Error", {}).get("Code") not in _NO_BATCH:
                        raise
                    batched = False
            for qid in chunk:
                yield client.get_query_execution(QueryExecutionId=qid)["QueryExecution"]

    def statements(self) -> list[Statement]:
        """The workgroup's queries that succeeded, as Athena statements."""
        return list(athena_statements(self.query_executions()))
