// Sluice dashboard: live refresh of pages marked <main data-live="ms"> (paused while the
// user ticks boxes or types, and by the header's switch), and "Copy" buttons. Every page
// works without this file; it only saves reloading by hand.
(function () {
  "use strict";
  var main = document.querySelector("main[data-live]");
  var toggle = document.getElementById("live-toggle");
  var paused = sessionStorage.getItem("sluice-live-paused") === "1";

  function label() {
    if (toggle) toggle.textContent = paused ? "Resume live updates" : "Pause live updates";
  }

  function busy() {
    var active = document.activeElement;
    if (active && main.contains(active) && /^(INPUT|SELECT|TEXTAREA)$/.test(active.tagName)) return true;
    return main.querySelector("input[type=checkbox][name=ids]:checked") !== null;
  }

  function refresh() {
    if (paused || document.hidden || busy()) return;
    fetch(location.href, { credentials: "same-origin", redirect: "manual" })
      .then(function (response) {
        if (!response.ok) return null;
        return response.text();
      })
      .then(function (html) {
        if (!html || paused || busy()) return;
        var next = new DOMParser().parseFromString(html, "text/html").querySelector("main");
        if (next) main.innerHTML = next.innerHTML;
      })
      .catch(function () {});
  }

  if (main && toggle) {
    toggle.hidden = false;
    label();
    toggle.addEventListener("click", function () {
      paused = !paused;
      sessionStorage.setItem("sluice-live-paused", paused ? "1" : "0");
      label();
    });
    setInterval(refresh, parseInt(main.getAttribute("data-live"), 10) || 2000);
  }

  function showCopyButtons() {
    document.querySelectorAll("button[data-copy]").forEach(function (b) { b.hidden = false; });
  }
  showCopyButtons();
  if (main) new MutationObserver(showCopyButtons).observe(main, { childList: true });
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("button[data-copy]");
    if (!button) return;
    var source = document.querySelector(button.getAttribute("data-copy"));
    if (source && navigator.clipboard) {
      navigator.clipboard.writeText(source.textContent).then(function () {
        button.textContent = "Copied";
        setTimeout(function () { button.textContent = "Copy"; }, 1500);
      });
    }
  });
})();
