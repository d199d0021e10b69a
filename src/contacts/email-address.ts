// One normal form for addresses across the audience area (contacts,
// suppressions, unsubscribe tokens, engagement): trimmed and lower-cased as a
// whole. RFC 5321 §2.4 allows a case-sensitive local part, but mailbox
// providers do not treat Bob@ and bob@ as different people, and a suppression
// that missed because of case would mail someone who asked not to be mailed,
// so the whole address is folded.

/** RFC 5321 §4.5.3.1.3: a path is at most 256 octets including the angle brackets. */
export const MAX_ADDRESS_LENGTH = 254;
/** RFC 5321 §4.5.3.1.1. */
const MAX_LOCAL_PART_LENGTH = 64;
/** RFC 1035 §2.3.4. */
const MAX_LABEL_LENGTH = 63;

// Dot-atom local part (RFC 5322 §3.2.3) with UTF-8 letters and digits allowed
// (RFC 6531). Quoted local parts and address literals are not accepted: mail
// to them is rare and they are a favourite of injection attempts.
const LOCAL_PART = /^[\p{L}\p{N}!#$%&'*+/=?^_`{|}~-]+(\.[\p{L}\p{N}!#$%&'*+/=?^_`{|}~-]+)*$/u;
const LABEL = /^[\p{L}\p{N}]([\p{L}\p{N}-]*[\p{L}\p{N}])?$/u;

export function normaliseAddress(address: string): string {
  return address.trim().toLowerCase();
}

/** Whether a normalised address is one we accept for a contact or a suppression. */
export function isValidAddress(address: string): boolean {
  if (address.length === 0 || address.length > MAX_ADDRESS_LENGTH) return false;
  const at = address.lastIndexOf('@');
  if (at <= 0) return false;
  const local = address.slice(0, at);
  const domain = address.slice(at + 1);
  if (local.length > MAX_LOCAL_PART_LENGTH || !LOCAL_PART.test(local)) return false;
  const labels = domain.split('.');
  // A bare host (user@localhost) cannot receive Internet mail; a numeric TLD
  // means an IP address typed without brackets.
  if (labels.length < 2 || /^\d+$/.test(labels.at(-1)!)) return false;
  return labels.every((l) => l.length <= MAX_LABEL_LENGTH && LABEL.test(l));
}
