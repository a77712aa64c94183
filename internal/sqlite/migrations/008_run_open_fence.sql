-- The fence of the coordinator that opened each run's current generation
-- (ledger.Run.OpenFence): consumers refuse a message whose fence is below
-- it (invariant 10). Compatibility: runs opened by earlier versions keep 0,
-- which means no lower bound is known; the next generation they open sets it.
ALTER TABLE runs ADD COLUMN open_fence INTEGER NOT NULL DEFAULT 0;
