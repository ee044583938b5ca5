// sparring web: tiny progressive enhancements (everything works without JavaScript, except
// the automatic refresh of live pages).
(function () {
  "use strict";
  function poll(url, every, onData) {
    function tick() {
      fetch(url, { credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (d) { if (d && onData(d) !== false) { setTimeout(tick, every); } })
        .catch(function () { setTimeout(tick, every * 2); });
    }
    setTimeout(tick, every);
  }
  document.addEventListener("DOMContentLoaded", function () {
    // live run progress
    var prog = document.getElementById("progress");
    if (prog && prog.dataset.status === "running") {
      poll(prog.dataset.url, 2000, function (d) {
        ["status", "done", "failed", "expected"].forEach(function (k) {
          var el = prog.querySelector('[data-field="' + k + '"]');
          if (el && d[k] !== null && d[k] !== undefined) { el.textContent = d[k]; }
        });
        var hint = document.getElementById("reload-hint");
        if (hint && String(d.done) !== prog.dataset.done) { hint.hidden = false; }
        if (d.status !== "running") { window.location.reload(); return false; }
        return true;
      });
    }
    // a game waiting for the other players
    var st = document.getElementById("game-status");
    if (st && st.dataset.status === "waiting") {
      poll(st.dataset.url, 700, function (d) {
        if (d.status !== "waiting") { window.location.reload(); return false; }
        return true;
      });
    }
    // slider value next to the slider
    document.querySelectorAll("input[type=range][data-output]").forEach(function (r) {
      var out = document.getElementById(r.dataset.output);
      r.addEventListener("input", function () { if (out) { out.textContent = r.value; } });
    });
    // typing in a proposal count selects "propose", typing a message selects "message"
    var move = document.getElementById("move-form");
    if (move) {
      move.addEventListener("input", function (ev) {
        var kind = ev.target.type === "number" ? "propose" : (ev.target.tagName === "TEXTAREA" ? "message" : null);
        var radio = kind && move.querySelector('input[name=kind][value="' + kind + '"]');
        if (radio) { radio.checked = true; }
      });
    }
  });
})();
