// Package schedule parses AWS EventBridge schedule expressions, rate(...)
// and cron(...), and computes their ticks: the nominal instants a job runs
// for. The same expression drives the EventBridge rule in AWS and the
// in-process scheduler locally, and the coordinator uses Prev to turn the
// time a trigger arrived into the tick it stands for.
//
// # Semantics
//
// All times are UTC: every method converts its arguments to UTC and returns
// UTC instants. Ticks fall on whole minutes.
//
// ParseIn reads a cron expression's fields in an IANA time zone, as
// EventBridge Scheduler does with ScheduleExpressionTimezone: cron(0 9 * *
// ? *) in Europe/London ticks at 09:00 London time, 09:00 UTC in winter
// and 08:00 UTC in summer. As in Scheduler, a local time the clocks skip
// (spring forward) does not tick that day, and one they go through twice
// (autumn) ticks once, at its first occurrence. A rate does not depend on
// the zone. The zone database is built in (time/tzdata).
//
// rate(value unit) takes a positive integer value and a unit of minute,
// hour or day, singular when the value is 1 and plural otherwise
// (rate(1 hour), rate(5 minutes)), as AWS requires. Its ticks are the
// multiples of the period counted from the Unix epoch, 1970-01-01T00:00:00Z:
// rate(5 minutes) ticks at :00, :05, :10, …; rate(1 day) at 00:00 UTC;
// rate(5 hours) at 00:00, 05:00, 10:00, … of 1970-01-01 and on, so not at
// the same hours every day; rate(7 days) on Thursdays, the epoch's weekday.
// EventBridge itself anchors a rate at the moment the rule was created, so
// its triggers arrive at some fixed offset from these ticks; baton needs a
// nominal time that every process derives alike, and epoch alignment gives
// one. Prev maps each trigger to the latest tick at or before it.
//
// cron(minutes hours day-of-month month day-of-week year) is the AWS
// dialect of Quartz cron: six fields, no seconds, a required year.
//
// As EventBridge does, Parse takes single spaces between the parts and no
// other white space (no tabs, no runs of spaces, none inside the
// parentheses' edges), and a rate's value without leading zeros.
//
//	field         values               special characters
//	minutes       0-59                 , - * /
//	hours         0-23                 , - * /
//	day-of-month  1-31                 , - * ? / L W
//	month         1-12 or JAN-DEC      , - * /
//	day-of-week   1-7 or SUN-SAT       , - * ? L #
//	year          1970-2199            , - * /
//
// Day-of-week counts from 1 = Sunday to 7 = Saturday. Exactly one of
// day-of-month and day-of-week is "?": the other says which days fire.
// Names are case-insensitive three-letter abbreviations. A list joins
// values, ranges (a-b) and steps (a/s: a, a+s, … up to the field's maximum;
// */s starts at the field's minimum; a-b/s stays within a-b). A range whose
// start is after its end wraps around the field, as in Quartz: hours 22-2
// are 22, 23, 0, 1, 2; FRI-MON is Friday to Monday. Years never wrap.
//
// The special day forms each stand alone in their field:
//
//	day-of-month  L      the last day of the month
//	              LW     the last weekday (Monday to Friday) of the month
//	              nW     the weekday nearest day n, within the month: a
//	                     Saturday moves to the Friday before, a Sunday to the
//	                     Monday after, except across the month's ends (1W on a
//	                     Saturday is Monday the 3rd); no tick in a month
//	                     shorter than n days
//	day-of-week   L      Saturday, the last day of the week
//	              nL     the last day n of the month (6L: the last Friday)
//	              n#k    the k-th day n of the month, k in 1-5 (2#1: the
//	                     first Monday); no tick in a month without one
//
// Not supported: L-n (offsets from the month's end), steps in day-of-week
// (the AWS reference lists none), and special forms inside lists. Years
// run from 1970 to 2199, as in EventBridge; the cron engine itself stops at
// 2099, so a year of 2100–2199 takes its ticks from a calendar-identical
// year it knows (the same weekday on January 1st, the same leap day).
//
// Next returns the first tick strictly after t, Prev the latest tick at or
// before t, and both return the zero Time when there is none (a cron
// expression's years all lie on the other side of t). A Schedule is
// immutable and safe for concurrent use.
//
// # Errors
//
// Parse rejects every expression that breaks the rules above, and never
// panics. Its errors are *ParseError values, for which
// errors.Is(err, ErrInvalid) holds; their text starts with the expression
// and, for cron, names the field at fault by position and name:
//
//	cron(0 0 ? * 9 *): field 5 (day-of-week) "9": value out of range 1-7
//	rate(1 minutes): value 1 takes the singular unit "minute"
//
// Parse also rejects a cron expression that never fires between 1970 and
// 2199, such as February 30th. Ticks returns an error wrapping
// ErrTooManyTicks, which states the number of ticks, when the range holds
// more than its limit.
package schedule
