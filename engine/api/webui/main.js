// Tabs: "/" shows the chat, "/dashboard" the dashboard (one page, switched without a reload).
'use strict';

(() => {
  function show(view) {
    for (const name of ['chat', 'dashboard']) {
      document.getElementById('view-' + name).hidden = name !== view;
      document.getElementById('tab-' + name).classList.toggle('active', name === view);
    }
    Dashboard.setVisible(view === 'dashboard');
    if (view === 'chat') document.getElementById('input').focus();
  }
  const viewOf = (path) => (path === '/dashboard' ? 'dashboard' : 'chat');

  for (const tab of document.querySelectorAll('nav a')) {
    tab.addEventListener('click', (e) => {
      e.preventDefault();
      history.pushState({}, '', tab.getAttribute('href'));
      show(tab.dataset.view);
    });
  }
  window.addEventListener('popstate', () => show(viewOf(location.pathname)));

  Chat.start();
  show(viewOf(location.pathname));
})();
