-- Finished runs by the time they finished, for pruning past a job's
-- retention (ledger.Pruner): one index entry per finished run.
CREATE INDEX runs_finished ON runs (finished_at) WHERE finished_at > 0;
