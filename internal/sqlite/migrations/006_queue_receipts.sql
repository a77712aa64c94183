-- A receipt handle carries its message id (see queue_receipt.go), so the
-- statements on a handle find the message by id: the receipt index only
-- cost every receive and delete a second b-tree write. Handles given out
-- before this migration no longer match; their messages come back after
-- their visibility timeout, as any message whose delete was lost.
DROP INDEX messages_by_receipt;
