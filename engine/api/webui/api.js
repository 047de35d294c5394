// Same-origin calls to the coordinator's API. With --api-key the server answers 401: the page
// asks for the key once (kept in localStorage) and sends it as a Bearer token from then on.
'use strict';

const Api = (() => {
  const STORAGE = 'baton.apiKey';
  let key = localStorage.getItem(STORAGE) || '';
  let asking = null;  // one dialog for every caller that met a 401

  function askKey(message) {
    if (!asking) {
      asking = new Promise((resolve) => {
        const dialog = document.getElementById('key-dialog');
        const input = document.getElementById('key-input');
        document.getElementById('key-message').textContent = message;
        input.value = '';
        dialog.addEventListener('close', () => {
          key = input.value.trim();
          localStorage.setItem(STORAGE, key);
          asking = null;
          resolve();
        }, { once: true });
        dialog.showModal();
        input.focus();
      });
    }
    return asking;
  }

  // fetch() with the key; on 401 asks for it (up to three times) and tries again.
  async function request(path, init = {}) {
    for (let attempt = 0; ; attempt++) {
      const headers = Object.assign({}, init.headers || {});
      if (key) headers.Authorization = 'Bearer ' + key;
      const res = await fetch(path, Object.assign({}, init, { headers }));
      if (res.status !== 401 || attempt >= 3) return res;
      await askKey(key ? 'The server refused that key. Enter the API key:' : 'This server needs an API key (--api-key). Enter it:');
    }
  }

  // The message of an OpenAI-style error response.
  async function errorText(res) {
    try {
      const body = await res.json();
      return (body.error && body.error.message) || `${res.status} ${res.statusText}`;
    } catch (e) {
      return `${res.status} ${res.statusText}`;
    }
  }

  return { request, errorText };
})();
