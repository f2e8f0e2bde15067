// The console's login: the one-time code travels in the URL's fragment (#code=…), which the browser
// never sends to a server, so no log keeps it. It is taken off the address bar and out of history at
// once, then exchanged by a request carrying the console's header for a session: a cookie (HttpOnly,
// SameSite=Strict) and a page token in the answer's body. Cookies are not bound to ports, so a page on
// another port of this host gets the cookie; the token it never sees: it goes into this tab's
// sessionStorage (per origin, port included), which the console reads and sends as a header on every
// request (ui/src/backend/http.ts, SESSION_TOKEN_KEY). The page then opens the console.
(function () {
  "use strict";
  var status = document.getElementById("login-status");
  var hash = window.location.hash;
  var match = /(?:^#|&)code=([0-9a-f]+)/.exec(hash);
  history.replaceState(null, "", "/login");
  if (!match) {
    var why = {
      "#logged_out": "You logged out. ",
      "#ended": "Your login ended (it expired, or the hub restarted). ",
    }[hash] || "This link has no login code. ";
    status.textContent = why + "To log in, open a new link: portcullis operator link prints one.";
    return;
  }
  fetch("/console/v1/login", {
    method: "POST",
    credentials: "same-origin",
    headers: { "content-type": "application/json", "x-portcullis-console": "1" },
    body: JSON.stringify({ code: match[1] }),
  })
    .then(function (response) {
      return response.json().then(function (body) {
        if (response.ok && body && typeof body.token === "string") {
          try {
            window.sessionStorage.setItem("portcullis_console_session", body.token);
          } catch (e) {
            status.textContent =
              "This browser keeps no session storage for this page, where the console keeps its login: " + e;
            return;
          }
          window.location.replace("/");
          return;
        }
        status.textContent = (body && body.error && body.error.message) || "The hub refused the login.";
      });
    })
    .catch(function (e) {
      status.textContent = "The hub could not be reached: " + e;
    });
})();
