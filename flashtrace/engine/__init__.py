"""Engine floor (torch): loading models and their family specs, the per-layer recording, the attribution
maths (span aggregation, hops, token-wise IFR, baselines), inputs (tokens, roles, spans) and the cost
estimate. Knows nothing of the Trace record, storage, figures or Streamlit."""
