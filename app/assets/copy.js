// Copies the embed code and says so: on the button, and to a screen reader through a
// polite live region. (A CustomJS callback: code, the code box; button, the button.)
let said = document.getElementById('lab-copied');
if (!said) {  // made once, before its first words, so that they are announced
  said = document.createElement('div');
  said.id = 'lab-copied';
  said.setAttribute('role', 'status');
  said.style.cssText = 'position:absolute; width:1px; height:1px; overflow:hidden; clip-path:inset(50%)';
  document.body.append(said);
}
const label = 'Copy embed code';
const say = (words, shown) => {
  said.textContent = '';
  setTimeout(() => { said.textContent = words; }, 100);
  button.label = shown;
  setTimeout(() => { button.label = label; }, 2000);
};
const copied = () => say('Embed code copied to the clipboard.', 'Copied ✓');
const refused = () => say('The browser kept the clipboard: select the embed code and copy it.',
  'Select and copy');
try {
  navigator.clipboard.writeText(code.value).then(copied, refused);
} catch (error) {
  refused();
}
