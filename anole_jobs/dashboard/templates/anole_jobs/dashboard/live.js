// The dashboard's live pages (docs/dashboard.md). Served by the dashboard itself from its own
// origin, so a Content-Security-Policy of script-src 'self' allows it; no inline script.
//
// A region marked data-live="<seconds>" is fetched again every few seconds from the same URL
// with ?partial=1 (the view answers the region's HTML only, with the header
// X-Anole-Partial: 1), while the tab is visible; a hidden tab stops asking, and a tab shown
// again refreshes at once. A refresh that fails keeps the last table and says so in a small
// status line; the next one tries again. Without scripts, every page is a plain page.
(function () {
  "use strict";

  // A notice carried in the URL (?notice=…, when the messages framework is not installed)
  // shows once: reloading the page must not show it again.
  var url = new URL(window.location.href);
  if (url.searchParams.has("notice")) {
    url.searchParams.delete("notice");
    window.history.replaceState(window.history.state, "", url.pathname + url.search + url.hash);
  }

  // A form whose button carries data-confirm asks first (the job page's Delete).
  document.addEventListener("submit", function (event) {
    var button = event.submitter;
    var question = button && button.getAttribute("data-confirm");
    if (question && !window.confirm(question)) {
      event.preventDefault();
    }
  });

  // Times in UTC (as the pages are written) or in the browser's own time zone, by choice:
  // a button in the header, the choice kept in this browser. Without scripts, UTC.
  var ZONE_KEY = "anole-jobs-times";
  var local = false;
  try {
    local = window.localStorage.getItem(ZONE_KEY) === "local";
  } catch (ignored) {
    local = false;
  }

  function pad(n) {
    return (n < 10 ? "0" : "") + n;
  }

  function localText(when) {
    return when.getFullYear() + "-" + pad(when.getMonth() + 1) + "-" + pad(when.getDate()) +
      " " + pad(when.getHours()) + ":" + pad(when.getMinutes()) + ":" + pad(when.getSeconds()) +
      " local";
  }

  function showTimes(root) {
    root.querySelectorAll('time[datetime$="Z"]').forEach(function (element) {
      if (!element.hasAttribute("data-utc")) {
        element.setAttribute("data-utc", element.textContent);
      }
      var when = new Date(element.getAttribute("datetime"));
      element.textContent = local && !isNaN(when.getTime()) ?
        localText(when) : element.getAttribute("data-utc");
    });
  }

  var nav = document.querySelector("header nav");
  if (nav) {
    var zone = document.createElement("button");
    zone.type = "button";
    zone.className = "secondary small zone";
    var labelZone = function () {
      zone.textContent = local ? "Times: local" : "Times: UTC";
      zone.setAttribute("aria-pressed", local ? "true" : "false");
      zone.title = "Show times in " + (local ? "UTC" : "this browser's time zone");
    };
    zone.addEventListener("click", function () {
      local = !local;
      try {
        window.localStorage.setItem(ZONE_KEY, local ? "local" : "utc");
      } catch (ignored) {
        // A browser that keeps nothing: the choice lasts for this page.
      }
      labelZone();
      showTimes(document);
    });
    labelZone();
    nav.parentNode.appendChild(zone);
  }
  showTimes(document);

  var region = document.querySelector("[data-live]");
  if (!region) {
    return;
  }
  var seconds = Math.max(2, parseInt(region.getAttribute("data-live"), 10) || 5);
  var timer = null;
  var busy = false;
  var paused = false;

  var bar = document.createElement("div");
  bar.className = "live";
  var state = document.createElement("span");
  state.setAttribute("role", "status");
  state.className = "muted";
  var toggle = document.createElement("button");
  toggle.type = "button";
  toggle.className = "secondary small";
  bar.appendChild(state);
  bar.appendChild(document.createTextNode(" "));
  bar.appendChild(toggle);
  region.parentNode.insertBefore(bar, region);

  // In UTC, to the second, as every time on the pages ("12:30:05 UTC"), or local by choice.
  function clock() {
    var now = new Date();
    return local ? localText(now).slice(11) : now.toISOString().slice(11, 19) + " UTC";
  }

  function show(text, failed) {
    state.textContent = text;
    bar.classList.toggle("failed", !!failed);
  }

  function label() {
    toggle.textContent = paused ? "Resume updates" : "Pause updates";
    toggle.setAttribute("aria-pressed", paused ? "true" : "false");
    if (paused) {
      show("Updates paused.", false);
    } else if (!bar.classList.contains("failed")) {
      show("Updates every " + seconds + " s.", false);
    }
  }

  function partialUrl() {
    var target = new URL(window.location.href);
    target.searchParams.delete("notice");
    target.searchParams.set("partial", "1");
    return target.toString();
  }

  function refresh() {
    if (busy || paused || document.visibilityState !== "visible") {
      return;
    }
    busy = true;
    fetch(partialUrl(), {
      credentials: "same-origin",
      headers: { "X-Requested-With": "fetch" },
      cache: "no-store",
    })
      .then(function (response) {
        // A login page (an ended session) answers 200 without the header: not a table.
        if (!response.ok || response.headers.get("X-Anole-Partial") !== "1") {
          var why = response.status === 503 ? "the jobs store did not answer" :
            response.ok ? "reload the page (your session may have ended)" :
            "the server answered " + response.status;
          throw new Error(why);
        }
        return response.text();
      })
      .then(function (html) {
        // Not while a control inside the region has focus (the person is using it), nor
        // while rows are ticked (a selection for an action would be lost).
        if (!region.contains(document.activeElement) &&
            !region.querySelector("input[type=checkbox]:checked")) {
          // A section the person opened or closed (a traceback) stays as they left it.
          var opened = Array.prototype.map.call(
            region.querySelectorAll("details"), function (d) { return d.open; });
          region.innerHTML = html;
          region.querySelectorAll("details").forEach(function (d, i) {
            if (i < opened.length) {
              d.open = opened[i];
            }
          });
          showTimes(region);
        }
        show("Updated at " + clock() + "; updates every " + seconds + " s.", false);
      })
      .catch(function (error) {
        var why = error && error.message ? error.message : "no answer";
        show("Could not refresh (" + why + "); showing the table as it was. " +
             "Trying again in " + seconds + " s.", true);
      })
      .then(function () {
        busy = false;
      });
  }

  function start() {
    stop();
    timer = window.setInterval(refresh, seconds * 1000);
  }

  function stop() {
    if (timer !== null) {
      window.clearInterval(timer);
      timer = null;
    }
  }

  toggle.addEventListener("click", function () {
    paused = !paused;
    label();
    if (!paused) {
      refresh();
    }
  });

  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "visible") {
      refresh();
      start();
    } else {
      stop();
    }
  });

  label();
  if (document.visibilityState === "visible") {
    start();
  }
})();
