// The workbench's only script: sends an uploaded file as the request body (no multipart), with
// the session's CSRF token in a header, and shows a refusal as one line on the page.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
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
