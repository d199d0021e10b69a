// One normal form for addresses across the audience area (contacts,
// suppressions, unsubscribe tokens, engagement): trimmed, lower-cased as a
// whole, and in Unicode NFC, as RFC 6532 §3.1 asks of an internationalised
// address (an ö pasted as o and a combining mark is the same person's). RFC 5321 §2.4 allows a case-sensitive local part, but mailbox
// providers do not treat Bob@ and bob@ as different people, and a suppression
// that missed because of case would mail someone who asked not to be mailed,
// so the whole address is folded.

export { isValidAddress } from '../core/mail-address.js';

export function normaliseAddress(address: string): string {
  return address.trim().toLowerCase().normalize('NFC');
}
