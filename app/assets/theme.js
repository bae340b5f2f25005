// The page around the lab follows its theme: the hidden theme marker's text is "light"
// or "dark" (app/theme.py). (A CustomJS callback: cb_obj is the marker; paper is the
// dark theme's background.) The built site's page styles read data-lab-theme too.
const root = document.documentElement;
const dark = cb_obj.text === 'dark';
root.dataset.labTheme = cb_obj.text;
root.style.colorScheme = dark ? 'dark' : 'light';
root.style.backgroundColor = dark ? paper : '';
