#!/usr/bin/env node
// Starts one local server that speaks an AWS wire protocol, for tests.
//
//   node start.js dynamodb [--host 127.0.0.1] [--port 0] [--exit-with-stdin]
//   node start.js sqs      [--host 127.0.0.1] [--port 0] [--exit-with-stdin]
//
// --port 0 (the default) lets the kernel pick a free port. When the server
// listens, one line goes to stdout:
//
//   ready <service> http://<host>:<port>
//
// and nothing else is written to stdout afterwards. Diagnostics go to stderr.
// The process stops on SIGINT/SIGTERM and, with --exit-with-stdin, as soon as
// its standard input reaches end of file (the parent died or closed the pipe).
"use strict";

const usage = "usage: node start.js <dynamodb|sqs> [--host H] [--port P] [--exit-with-stdin]";

function parseArgs(argv) {
  const opts = { service: "", host: "127.0.0.1", port: 0, exitWithStdin: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--host") opts.host = argv[++i];
    else if (a === "--port") opts.port = Number(argv[++i]);
    else if (a === "--exit-with-stdin") opts.exitWithStdin = true;
    else if (a === "-h" || a === "--help") { console.log(usage); process.exit(0); }
    else if (!a.startsWith("-") && !opts.service) opts.service = a;
    else fail(`unknown argument ${a}`);
  }
  if (!opts.host) fail("--host needs a value");
  if (!Number.isInteger(opts.port) || opts.port < 0 || opts.port > 65535) fail("--port must be 0..65535");
  return opts;
}

function fail(msg) {
  console.error(`start.js: ${msg}\n${usage}`);
  process.exit(2);
}

// startDynamoDB starts dynalite in memory (no --path), with tables ACTIVE at
// once instead of after the default 500 ms in CREATING/UPDATING/DELETING.
//
// dynalite throws from a request's "error" event (its index.js:
// req.on('error', function (err) { throw err })), so a client that gives up
// on a request mid-flight (a cancelled context closes the connection:
// ECONNRESET, "aborted") used to kill the whole server, and every later test
// failed with "connection refused". Such an error is logged and ignored;
// anything else still stops the process. The handler replaces the launcher's
// own (failed), which would otherwise run too and stop the server anyway.
function startDynamoDB(host, port) {
  process.removeListener("uncaughtException", failed);
  process.on("uncaughtException", (err) => {
    if (err && (err.code === "ECONNRESET" || err.message === "aborted")) {
      console.error(`start.js: a client aborted a request (${err.code || err.message}); ignored`);
      return;
    }
    console.error(`start.js: ${err && err.stack ? err.stack : err}`);
    process.exit(1);
  });
  const dynalite = require("dynalite");
  const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve(server));
  });
}

// The changes made to local-aws-sqs 2.0.2 as loaded (sqsFixes).
//
// Receive count: its visibility routine, shared by ReceiveMessage and
// ChangeMessageVisibility, increments ApproximateReceiveCount on both; on
// SQS only a receive counts (and so only receives count towards a redrive
// policy's maxReceiveCount). The third argument is true for
// ChangeMessageVisibility.
const sqsFix = {
  from: "Wt=function(t,e,i){if(!t)return;let r=this.VisibilityTimeout*1e3;typeof e==\"number\"&&!isNaN(e)&&(r=e*1e3);let n=Number(t.record.attributes.ApproximateReceiveCount)+1;",
  to: "Wt=function(t,e,i){if(!t)return;let r=this.VisibilityTimeout*1e3;typeof e==\"number\"&&!isNaN(e)&&(r=e*1e3);let n=Number(t.record.attributes.ApproximateReceiveCount)+(i?0:1);",
};

// Long polls: its receive collects visible messages every 10 ms and
// answers only when it holds MaxNumberOfMessages or the wait is over, so a
// long poll that found one message kept it (hidden) for the whole wait. SQS
// answers a long poll as soon as it has a message to return.
const sqsLongPollFix = {
  from: "if(r.length==e){clearInterval(c),clearTimeout(n),o();break}}},10)",
  to: "if(r.length==e){clearInterval(c),clearTimeout(n),o();break}}r.length>0&&(clearInterval(c),clearTimeout(n),o())},10)",
};

const sqsFixes = [
  { name: "receive-count", ...sqsFix },
  { name: "long-poll", ...sqsLongPollFix },
];

// loadSQS loads local-aws-sqs with sqsFixes applied, and fails when the
// bundle no longer holds the code one fixes (a new version: check whether
// the bug is still there and update or drop the fix).
function loadSQS() {
  const fs = require("fs");
  const path = require("path");
  const Module = require("module");
  const file = require.resolve("local-aws-sqs");
  let src = fs.readFileSync(file, "utf8");
  for (const fix of sqsFixes) {
    if (src.split(fix.from).length !== 2) {
      throw new Error(`${file}: the ${fix.name} fix no longer applies; review sqsFixes in start.js`);
    }
    src = src.replace(fix.from, fix.to);
  }
  const m = new Module(file, module);
  m.filename = file;
  m.paths = Module._nodeModulePaths(path.dirname(file));
  m._compile(src, file);
  return m.exports;
}

// startSQS starts local-aws-sqs (JSON and query protocols), with sqsFixes.
// Queue URLs are http://<host>:<port>/123456789012/<name>; ARNs use
// us-east-1.
function startSQS(host, port) {
  const { createSqsServer } = loadSQS();
  return createSqsServer({
    port,
    hostname: host,
    region: "us-east-1",
    accountId: "123456789012",
    // Tests make unique queue names; no 60 s wait after DeleteQueue.
    emulateQueueCreationLifecycle: false,
    emulateLazyQueues: false,
    validateDlqDestination: true,
  });
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  let server;
  switch (opts.service) {
    case "dynamodb": server = await startDynamoDB(opts.host, opts.port); break;
    case "sqs": server = await startSQS(opts.host, opts.port); break;
    default: fail(`unknown service ${JSON.stringify(opts.service)}`);
  }
  const addr = server.address();
  const host = addr.family === "IPv6" ? `[${addr.address}]` : addr.address;
  process.stdout.write(`ready ${opts.service} http://${host}:${addr.port}\n`);

  const stop = () => process.exit(0);
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  if (opts.exitWithStdin) {
    process.stdin.on("end", stop);
    process.stdin.on("close", stop);
    process.stdin.on("error", stop);
    process.stdin.resume();
  }
}

// failed reports err and exits. A busy port is an everyday mistake (a
// server left running): one line that says what to do, not a stack trace.
function failed(err) {
  if (err && err.code === "EADDRINUSE") {
    console.error(`start.js: ${err.address || "127.0.0.1"}:${err.port} is busy (a server left running? stop it, or pick another --port; --port 0 takes a free one)`);
  } else {
    console.error(`start.js: ${err && err.stack ? err.stack : err}`);
  }
  process.exit(1);
}

// The SQS server reports a failed listen as an 'error' event nobody handles.
process.on("uncaughtException", failed);
main().catch(failed);
