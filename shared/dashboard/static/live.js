// Follows the loops without a reload: /events says when a journal gains a row, and the page's own fragment is
// fetched again and swapped in. Pages holding a form being written in (the canon editor) are left alone.
(function () {
  "use strict";
  var main = document.getElementById("main");
  var badge = document.getElementById("live");
  var busy = false, again = false;

  function fragmentUrl() {
    var url = new URL(window.location.href);
    url.searchParams.set("fragment", "1");
    return url.toString();
  }

  function refresh() {
    if (document.querySelector(".no-live")) return;
    if (busy) { again = true; return; }
    busy = true;
    fetch(fragmentUrl(), {credentials: "same-origin", cache: "no-store"})
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        if (html !== null) main.innerHTML = html;
      })
      .finally(function () {
        busy = false;
        if (again) { again = false; refresh(); }
      });
  }

  var events = new EventSource("/events");
  var first = true;
  events.onmessage = function (message) {
    var heads = JSON.parse(message.data);
    badge.textContent = "live · " + Object.keys(heads).map(function (k) { return k + " " + heads[k]; }).join(" · ");
    badge.dataset.heads = message.data;
    if (first) { first = false; return; }  // the page was rendered at these heads
    refresh();
  };
  events.onerror = function () { badge.textContent = "reconnecting"; };

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (form.dataset && form.dataset.confirm && !window.confirm(form.dataset.confirm)) event.preventDefault();
  });
})();
