// Package ui is baton's web dashboard, served by `baton ui`: the jobs with
// their schedules and next ticks, a job's runs, a run's timeline (one bar
// per item from enqueue to claim to done), staleness per asset over the
// recent runs, the coordinator's lease and the dead-letter queue, with the
// operator's actions behind a confirmation. A job's submissions show
// beside its ticks, and a run whose items are stored with it (a
// submission, a run-time list) is read a few stored pages at a time.
// The lease page lists the application locks too (batonlock, the
// backend's Locks): key, holder, owner token, fence, times, refused
// acquisitions and escalation, escalated keys first; on DynamoDB, which
// keeps no index of the lock keys, it says that listing is unsupported.
//
// Everything is rendered on the server (html/template, SVG for the
// timeline and the staleness chart) from assets embedded in the binary; a
// few lines of JavaScript refresh a page in place while its run is in
// flight. Nothing needs a Node build.
//
// # Data
//
// Pages read the backend's ports (ledger, lease, queues) and write
// nothing. What a job's page and a run's page say of state (counts by
// state, the lease's state, pause, waiting and stuck items, limits) is
// package runstatus's report, the one 'baton status' prints and
// batonclient.Status returns: the pages format it, they decide nothing
// of it. The timeline is drawn from the times the ledger already
// records, no extra writes: the run's opening (the earliest a root item
// can be enqueued), the latest input's finish (the earliest a derived item
// can be), an item's first claim (CreatedAt), its latest claim
// (StartedAt: attempts before it failed or were taken over) and its end
// (FinishedAt). The enqueue times are therefore lower bounds: the ledger
// does not record when a message was sent.
//
// The items of a submission's run or of a run-time list are the run's
// stored pages (ledger.Store.GetPage): a run's page reads pagesShown of
// them from ?from= and the item records of those pages only
// (ListItemRange), so that its cost does not grow with the run; a job's
// page counts such runs from their run records. Submissions are listed
// when the ledger has the optional ledger.SubmissionLister.
//
// # Actions
//
// Replaying a tick or an item, redriving the dead-letter queue, cancelling
// a run or an item and releasing an expired lease are done by an Operator
// (an Actor: the operator's calls of package ops, which keep the CLI's
// guards; no command runs and no command's output is shown). Each
// is shown first on a confirmation page that says what will happen, from
// the state as it is now; only the confirmation's POST acts. POSTs must
// carry the session's token (a cookie-bound CSRF token), and cross-origin
// requests are refused (Sec-Fetch-Site and Origin, with
// net/http.CrossOriginProtection). ReadOnly hides and refuses every action.
//
// # Access
//
// With an AccessToken every request must present it: once as ?token=…
// (which sets an HttpOnly, SameSite=Strict cookie) or on each request as
// "Authorization: Bearer …". Without one, only requests whose Host is a
// loopback name are served, which also defeats DNS rebinding; the command
// refuses to listen off loopback without a token and an explicit flag.
package ui
