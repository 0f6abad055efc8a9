import { fireEvent, render, screen, within } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { api, ConflictError } from '../api/client';
import type { Secret } from '../api/types';
import { SecretsPage } from './SecretsPage';

const secret = (id: number, name: string): Secret => ({ id, name, created: '2025-01-01T00:00:00Z', updated: '2025-01-02T00:00:00Z' });

describe('SecretsPage', () => {
  afterEach(() => vi.restoreAllMocks());

  it('lists names with how a header uses them, stores one, and shows the server’s refusal in its words', async () => {
    const listed = vi.spyOn(api, 'secrets').mockResolvedValue([secret(1, 'orders_key')]);
    const create = vi.spyOn(api, 'createSecret').mockRejectedValueOnce(new ConflictError({ detail: "you already have a secret named 'orders_key'", name: ["you already have a secret named 'orders_key'"] }));
    render(<SecretsPage />);
    const row = await screen.findByTestId('secret-orders_key');
    expect(row.textContent).toContain('{{ secrets.orders_key }}');
    const form = screen.getByRole('form', { name: 'Store a secret' });
    fireEvent.change(within(form).getByLabelText(/^Name/), { target: { value: 'orders_key' } });
    fireEvent.change(within(form).getByLabelText('Value'), { target: { value: 's3cret' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Store secret' }));
    expect((await screen.findByTestId('secret-error')).textContent).toBe("you already have a secret named 'orders_key'");
    expect(create).toHaveBeenCalledWith({ name: 'orders_key', value: 's3cret' });

    create.mockResolvedValueOnce(secret(2, 'weather'));
    listed.mockResolvedValue([secret(1, 'orders_key'), secret(2, 'weather')]);
    fireEvent.change(within(form).getByLabelText(/^Name/), { target: { value: 'weather' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Store secret' }));
    await screen.findByTestId('secret-weather');
    expect(screen.queryByTestId('secret-error')).toBeNull();
    expect(document.body.textContent).not.toContain('s3cret'); // a value is never shown
  });

  it('refuses a name tools could not use before asking the server', async () => {
    vi.spyOn(api, 'secrets').mockResolvedValue([]);
    render(<SecretsPage />);
    const form = await screen.findByRole('form', { name: 'Store a secret' });
    fireEvent.change(within(form).getByLabelText(/^Name/), { target: { value: 'my key' } });
    fireEvent.change(within(form).getByLabelText('Value'), { target: { value: 'x' } });
    expect(within(form).getByText('Letters, digits, “_”, “.” and “-” only.')).toBeTruthy();
    expect(within(form).getByRole<HTMLButtonElement>('button', { name: 'Store secret' }).disabled).toBe(true);
  });

  it('replaces a value and deletes a secret', async () => {
    vi.spyOn(api, 'secrets').mockResolvedValue([secret(1, 'orders_key')]);
    const replace = vi.spyOn(api, 'replaceSecret').mockResolvedValue(secret(1, 'orders_key'));
    const remove = vi.spyOn(api, 'deleteSecret').mockResolvedValue(undefined);
    vi.spyOn(window, 'confirm').mockReturnValue(true);
    render(<SecretsPage />);
    const row = await screen.findByTestId('secret-orders_key');
    fireEvent.click(within(row).getByRole('button', { name: 'Replace value' }));
    fireEvent.change(within(row).getByLabelText('New value of orders_key'), { target: { value: 'rotated' } });
    fireEvent.click(within(row).getByRole('button', { name: 'Save' }));
    await vi.waitFor(() => expect(replace).toHaveBeenCalledWith(1, 'rotated'));
    fireEvent.click(await within(row).findByRole('button', { name: 'Delete' }));
    await vi.waitFor(() => expect(remove).toHaveBeenCalledWith(1));
  });
});
