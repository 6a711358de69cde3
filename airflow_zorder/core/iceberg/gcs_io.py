"""pyiceberg's own pyarrow FileIO with the two GCS options pyiceberg 0.12 lacks: anonymous access and bounded retries.

pyiceberg builds ``GcsFileSystem`` from ``gcs.oauth2.token``, ``gcs.oauth2.token-expires-at``, ``gcs.service.host``
and ``gcs.default-bucket-location`` only: without a token it falls back to the default credentials (no anonymous
read of a public bucket or an emulator), and google-cloud-cpp then retries a dead endpoint for 15 minutes. A
catalog names this class with ``py-io-impl`` (a ``google_cloud_platform`` connection does); ``gcs.anonymous`` and
``gcs.retry-time-limit-s`` are this class's properties. Every other scheme is pyiceberg's, unchanged.
"""

from __future__ import annotations

import datetime as dt
from typing import Any
from urllib.parse import urlparse

from pyiceberg.io import GCS_DEFAULT_LOCATION, GCS_SERVICE_HOST, GCS_TOKEN, GCS_TOKEN_EXPIRES_AT_MS
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.utils.datetime import millis_to_datetime

from airflow_zorder.core.storage.locations import GCS_RETRY_TIME_LIMIT_S

__all__ = ["GCS_ANONYMOUS", "GCS_RETRY_TIME_LIMIT", "IO_IMPL", "GcsBoundedFileIO"]

GCS_ANONYMOUS = "gcs.anonymous"
GCS_RETRY_TIME_LIMIT = "gcs.retry-time-limit-s"
#: the ``py-io-impl`` value naming this FileIO
IO_IMPL = "airflow_zorder.core.iceberg.gcs_io.GcsBoundedFileIO"


class GcsBoundedFileIO(PyArrowFileIO):
    """``PyArrowFileIO`` whose GCS filesystem may be anonymous and gives up after ``gcs.retry-time-limit-s``."""

    def _initialize_gcs_fs(self) -> Any:
        from pyarrow.fs import GcsFileSystem

        props = self.properties
        seconds = float(props.get(GCS_RETRY_TIME_LIMIT, GCS_RETRY_TIME_LIMIT_S))
        kwargs: dict[str, Any] = {"retry_time_limit": dt.timedelta(seconds=seconds)}
        if str(props.get(GCS_ANONYMOUS, "")).lower() == "true":
            kwargs["anonymous"] = True
        elif token := props.get(GCS_TOKEN):  # pyiceberg's names and meaning from here on
            kwargs["access_token"] = token
            if expires := props.get(GCS_TOKEN_EXPIRES_AT_MS):
                kwargs["credential_token_expiration"] = millis_to_datetime(int(expires))
        if location := props.get(GCS_DEFAULT_LOCATION):
            kwargs["default_bucket_location"] = location
        if endpoint := props.get(GCS_SERVICE_HOST):
            parts = urlparse(endpoint)
            kwargs.update(scheme=parts.scheme, endpoint_override=parts.netloc)
        return GcsFileSystem(**kwargs)
