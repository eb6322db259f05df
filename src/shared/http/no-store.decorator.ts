import { applyDecorators, Header } from '@nestjs/common';

/**
 * For every route whose answer carries a token or a secret (token pairs, device secrets, and API
 * keys or webhook secrets to come): no cache, shared or private, may keep the answer (RFC 6749
 * §5.1; Pragma for HTTP/1.0 caches). Error answers carry no secret and keep their own headers.
 */
export const NoStore = () => applyDecorators(Header('Cache-Control', 'no-store'), Header('Pragma', 'no-cache'));
