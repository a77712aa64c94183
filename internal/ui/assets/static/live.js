// Live refresh: a page whose <main> says data-live asks the server for
// its content again every data-refresh milliseconds and swaps it in,
// without reloading the page, until the content is no longer live.
(function () {
  "use strict";
  var timer = null;
  function schedule() {
    var main = document.getElementById("main");
    if (!main || main.dataset.live !== "true") { return; }
    var every = parseInt(main.dataset.refresh, 10) || 2000;
    timer = window.setTimeout(refresh, every);
  }
  function refresh() {
    timer = null;
    fetch(window.location.href, { headers: { "X-Baton-Partial": "1" }, credentials: "same-origin" })
      .then(function (r) { if (!r.ok) { throw new Error(r.status); } return r.text(); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var next = doc.getElementById("main");
        var main = document.getElementById("main");
        if (next && main) {
          main.replaceWith(document.adoptNode(next));
          var status = document.getElementById("live-status");
          if (status) { status.textContent = next.dataset.now || status.textContent; }
        }
        schedule();
      })
      .catch(function () { timer = window.setTimeout(refresh, 5000); });
  }
  // A confirmation is sent once: its button says the command runs (a
  // replay waits for its run to settle) and takes no second click.
  function guardConfirm() {
    var form = document.getElementById("confirm-form");
    if (!form) { return; }
    form.addEventListener("submit", function () {
      var button = document.getElementById("confirm");
      if (button) { button.disabled = true; button.textContent = "Running…"; }
    });
  }
  document.addEventListener("DOMContentLoaded", function () { schedule(); guardConfirm(); });
})();
