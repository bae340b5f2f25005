// The embed code for the picked views, copied to the clipboard.
// (A CustomJS callback: views, all_views, theme, sizes, title, code.)
const url = new URL(window.location.href.split('#')[0]);
// views: the Bokeh CheckboxGroup, whose labels follow all_views
const picked = views.active.length ? views.active.map((i) => all_views[i]) : all_views;
url.searchParams.set('views', picked.join(','));
url.searchParams.delete('section');  // the embed layout shows its views, whatever the section
// theme: the Bokeh Select of the embed's theme; auto, the reader's, is the page's default
if (theme.value === 'auto') url.searchParams.delete('theme');
else url.searchParams.set('theme', theme.value);
const n = picked.length;
const height = sizes.base + sizes.per_view * n;
// On a narrow viewport (a phone), taller: share_box.EMBED_HEIGHT.
const phone = sizes.phone_base + sizes.phone_per_view * n;
const slope = (sizes.slope_base + sizes.slope_per_view * n).toFixed(1);
const style = `border:0; max-width:100%; height:max(${height}px, calc(${phone}px + ${slope} * (360px - 100vw)))`;
// Its title names the views, so that a screen reader tells a page's embeds apart.
const names = picked.map((view) => views.labels[all_views.indexOf(view)]);
const named = `${title}: ${names.join(', ')}`.replace(/&/g, '&amp;').replace(/"/g, '&quot;');
code.value = `<iframe src="${url.href}" title="${named}" width="100%" height="${height}" `
  + `style="${style}" loading="lazy"></iframe>`;
try { navigator.clipboard.writeText(code.value).catch(() => {}); } catch (error) {}
