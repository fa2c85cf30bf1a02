"""Boolean masks over Arrow columns, shared by the Python reader's table builders (rank, tables, generic)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def equals(column: pa.ChunkedArray | pa.Array, value: str) -> np.ndarray:
    """Boolean mask of a dictionary-encoded string column equal to value, without decoding it."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    parts = []
    for chunk in chunks:
        if pa.types.is_dictionary(chunk.type):
            codes = [i for i, v in enumerate(chunk.dictionary.to_pylist()) if v == value]
            idx = chunk.indices.to_numpy(zero_copy_only=False)
            parts.append(np.isin(idx, codes) & ~np.asarray(chunk.is_null().to_numpy(zero_copy_only=False)))
        else:
            parts.append(pc.fill_null(pc.equal(chunk, value), False).to_numpy(zero_copy_only=False))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=bool)
