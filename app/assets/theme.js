// The page's side of the theme (app/theme.py). (A CustomJS callback: cb_obj is the
// hidden theme marker; paper is the dark theme's background.) Its text "ask" asks for
// the reader's preference, told in its tags now and whenever it changes; "light" or
// "dark" is the theme drawn, which the page around follows. The built site's page
// styles read data-lab-theme, and its status bar waits for a theme drawn.
const root = document.documentElement;
const scheme = window.matchMedia?.('(prefers-color-scheme: dark)');
const tell = () => { cb_obj.tags = [scheme?.matches ? 'dark' : 'light']; };
if (cb_obj.text === 'ask') {
  if (scheme && cb_obj.tags.length === 0) scheme.addEventListener('change', tell);
  tell();
} else if (cb_obj.text) {
  const dark = cb_obj.text === 'dark';
  root.dataset.labTheme = cb_obj.text;
  root.style.colorScheme = dark ? 'dark' : 'light';
  root.style.backgroundColor = dark ? paper : '';
}
