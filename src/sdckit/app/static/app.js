// The workbench's only script. (1) Upload: sends the file as the request body (no multipart),
// with the session's CSRF token in a header, and shows a refusal as one line on the page.
// (2) Protect: checks the parameters with the method's own rules (POST /protect/check) as they
// are typed, and shows a refusal beside the field it names. (3) Jobs: polls a job's progress
// (GET /jobs/<id>/progress) and goes on to its result when it is done.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  var job = document.getElementById("job");
  if (job) { followJob(job); }
  var params = document.getElementById("protect-form");
  if (params) { checkAsTyped(params); }
  var form = document.getElementById("upload-form");
  if (!form) { return; }
  var csrf = document.querySelector('meta[name="csrf-token"]').getAttribute("content");
  var error = document.getElementById("error");
  var status = document.getElementById("upload-status");
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var file = document.getElementById("upload-file").files[0];
    if (!file) { return; }
    error.hidden = true;
    status.textContent = "Reading " + file.name + "…";
    fetch("/open/upload", {
      method: "POST", credentials: "same-origin", body: file,
      headers: { "X-CSRF-Token": csrf, "X-File-Name": encodeURIComponent(file.name),
                 "Content-Type": "application/octet-stream" }
    }).then(function (response) {
      return response.json().catch(function () { return { error: "The server refused the upload (" + response.status + ")." }; });
    }).then(function (answer) {
      if (answer.redirect) { window.location.assign(answer.redirect); return; }
      status.textContent = "";
      error.textContent = answer.error;
      error.hidden = false;
    }).catch(function () {
      status.textContent = "";
      error.textContent = "The workbench did not answer; is `sdckit app` still running?";
      error.hidden = false;
    });
  });
});

function checkAsTyped(form) {
  var timer = null;
  var general = document.getElementById("error");
  function show(answer) {
    var fields = form.querySelectorAll(".field-error");
    for (var i = 0; i < fields.length; i++) {
      fields[i].textContent = "";
      var input = document.getElementById("p-" + fields[i].getAttribute("data-parameter"));
      if (input) { input.removeAttribute("aria-invalid"); }
    }
    general.hidden = true;
    if (answer.ok) { return; }
    var place = answer.parameter && document.getElementById("err-" + answer.parameter);
    if (place) {
      place.textContent = answer.error;
      document.getElementById("p-" + answer.parameter).setAttribute("aria-invalid", "true");
    } else {
      general.textContent = answer.error;
      general.hidden = false;
    }
  }
  var asked = 0;  // only the answer to the latest check is shown: answers may come back out of order
  function check() {
    var mine = ++asked;
    fetch("/protect/check", {
      method: "POST", credentials: "same-origin", body: new URLSearchParams(new FormData(form)),
      headers: { "Content-Type": "application/x-www-form-urlencoded" }
    }).then(function (r) { return r.json(); }).then(function (answer) {
      if (mine === asked) { show(answer); }
    }).catch(function () {});
  }
  form.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(check, 250); });
  form.addEventListener("change", check);
  form.addEventListener("submit", function () {
    document.getElementById("apply-status").textContent = "Applying and measuring…";
  });
}

function followJob(section) {
  var url = section.getAttribute("data-progress-url");
  var bar = document.getElementById("job-progress");
  var state = document.getElementById("job-state");
  var error = document.getElementById("error");
  var cancel = document.getElementById("cancel-form");
  function poll() {
    fetch(url, { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(function (answer) {
      bar.value = answer.fraction;
      if (answer.state === "done") { window.location.assign(answer.done_url); return; }
      if (answer.state === "running") {
        state.textContent = (answer.stage || "starting") + "…";
        setTimeout(poll, 200);
        return;
      }
      state.textContent = answer.state;
      if (cancel) { cancel.hidden = true; }
      if (answer.error) { error.textContent = answer.error; error.hidden = false; }
    }).catch(function () {
      error.textContent = "The workbench did not answer; is `sdckit app` still running?";
      error.hidden = false;
    });
  }
  poll();
}
